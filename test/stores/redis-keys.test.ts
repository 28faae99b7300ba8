import { describe, expect, it } from 'vitest';
import { fnv1a, RedisKeys } from '../../src/stores/redis/redis-keys.js';

/** FNV-1a over the UTF-8 bytes, written out as the layout defines it. */
function reference(resource: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(resource, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

describe('redis key layout', () => {
  it('puts every name in the shard FNV-1a of its UTF-8 bytes names, ASCII or not', () => {
    const names = ['job', 'a', 'job/17', 'é', 'aé', '🚀', '\uffff', 'shard/🚀/x', 'Z'.repeat(512)];
    for (let i = 0; i < 2000; i++) {
      const units = Array.from({ length: 1 + (i % 24) }, (_, k) =>
        String.fromCodePoint(
          k % 3 === 0 && i % 5 === 0 ? 0x80 + ((i * 31 + k) % 0x2000) : 0x21 + ((i * 7 + k) % 94),
        ),
      );
      names.push(units.join(''));
    }
    for (const shards of [2, 16, 1024]) {
      const keys = new RedisKeys('p:', shards);
      for (const name of names) expect(keys.shardOf(name), name).toBe(reference(name, shards));
    }
    expect(fnv1a(Buffer.from('job'))).toBe(reference('job', 2 ** 32));
  });

  it('names the keys of a shard from the prefix and the hash tag', () => {
    const keys = new RedisKeys('app:', 16);
    const shard = reference('job/1', 16);
    expect(keys.record('job/1')).toBe(`app:{${shard}}r:job/1`);
    expect(keys.recordPrefix(shard) + 'job/1').toBe(keys.record('job/1'));
    expect(keys.index(shard)).toBe(`app:{${shard}}index`);
    expect(new RedisKeys('x:', 1).record('é')).toBe('x:{0}r:é');
  });

  it("places a name, its permits, its fair-line slots and its ticket in the name's shard", () => {
    for (const shards of [2, 16, 1024]) {
      const keys = new RedisKeys('p:', shards);
      for (const name of ['job', 'é', '🚀/x', 'a\u0001b', '\u0001lead']) {
        const family = [
          `${name}\u0001permit=1`,
          `${name}\u0001permit=999`,
          `${name}\u0001queue=255`,
          `${name}\u0001ticket`,
        ];
        const shard = reference(keys.placementName(name), shards);
        for (const member of [name, ...family]) expect(keys.shardOf(member), member).toBe(shard);
      }
      expect(keys.placementName('job\u0001permit=3')).toBe('job');
      expect(keys.placementName('\u0001x')).toBe('\u0001x'); // a leading U+0001 is part of the name
    }
  });

  it('writes layout 2 for a new sharded namespace, 1 for one shard, and keeps whole-name placement on a layout 1 namespace', () => {
    expect(new RedisKeys('p:', 1).layout).toBe('leasehold-redis/1 shards=1');
    const keys = new RedisKeys('p:', 16);
    expect(keys.layout).toBe('leasehold-redis/2 shards=16');
    expect(keys.adopt('leasehold-redis/2 shards=4')).toBe(false);
    expect(keys.adopt('leasehold-redis/1 shards=4')).toBe(false);
    expect(keys.adopt('leasehold-redis/2 shards=16')).toBe(true);
    expect(keys.shardOf('job\u0001permit=1')).toBe(reference('job', 16));

    const old = new RedisKeys('p:', 16);
    expect(old.adopt('leasehold-redis/1 shards=16')).toBe(true);
    expect(old.layout).toBe('leasehold-redis/1 shards=16');
    for (const name of ['job\u0001permit=1', 'é\u0001queue=007', 'job'])
      expect(old.shardOf(name), name).toBe(reference(name, 16));
  });
});
