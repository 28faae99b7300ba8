import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, RedisStore, type Lease, type LeaseStore } from '../../src/index.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { RedisServer, redisUnavailable } from '../harness/redis-server.js';

/**
 * Records written by hand (or by another program) into a Redis namespace: every store call that
 * meets one answers RECORD_INVALID (renew / release: "not ours"), nothing is ever granted over it,
 * and the key is left exactly as it was. Batches that take records (acquireMany, acquireAll) fail
 * as a whole with nothing written; renewMany / releaseMany answer per lease.
 */

/** A corrupt record: how to write it at `key` (a record key of the namespace). */
type Corrupt = (redis: Redis, key: string) => Promise<unknown>;

const hash =
  (fields: Record<string, string>): Corrupt =>
  (redis, key) =>
    redis.del(key).then(() => redis.hset(key, fields));
const live = String(Date.now() + 3_600_000);
const past = '1000';

/** Each form, and a word its RECORD_INVALID message contains. */
const FORMS: [string, Corrupt, string][] = [
  ['a non-numeric token', hash({ owner: 'x', token: 'abc', expiresAt: past }), 'token is "abc"'],
  ['a negative token', hash({ owner: 'x', token: '-3', expiresAt: past }), 'token is "-3"'],
  ['a zero token', hash({ owner: '', token: '0', expiresAt: '0' }), 'token is "0"'],
  ['a fractional token', hash({ owner: 'x', token: '1.5', expiresAt: past }), 'token is "1.5"'],
  [
    'a token above 2^53 − 1',
    hash({ owner: 'x', token: '9007199254740993', expiresAt: past }),
    'token is "9007199254740993"',
  ],
  ['a missing token', hash({ owner: 'x', expiresAt: past }), 'token is missing'],
  ['a missing token (data only)', hash({ data: 'sx' }), 'token is missing'],
  ['a missing expiresAt', hash({ owner: 'x', token: '7' }), 'expiresAt is missing'],
  [
    'an expiresAt that is not a number',
    hash({ owner: 'x', token: '7', expiresAt: 'soon' }),
    'expiresAt is "soon"',
  ],
  [
    'a fractional expiresAt',
    hash({ owner: 'x', token: '7', expiresAt: '12.5' }),
    'expiresAt is "12.5"',
  ],
  ['a missing owner', hash({ token: '7', expiresAt: live }), 'owner is missing'],
  [
    'a huge owner',
    hash({ owner: 'o'.repeat(100_000), token: '7', expiresAt: past }),
    'owner is 100000 bytes',
  ],
  ['a string key', (redis, key) => redis.del(key).then(() => redis.set(key, '7')), 'not a hash'],
  ['a list key', (redis, key) => redis.del(key).then(() => redis.rpush(key, '7')), 'not a hash'],
];

/** Everything a key holds, to compare before and after. */
async function dump(redis: Redis, key: string): Promise<unknown> {
  const type = await redis.type(key);
  if (type === 'hash') return [type, await redis.hgetall(key)];
  if (type === 'string') return [type, await redis.get(key)];
  if (type === 'list') return [type, await redis.lrange(key, 0, -1)];
  return [type];
}

describeServer('redis corrupt records', redisUnavailable(), () => {
  let server: RedisServer;
  let redis: Redis;
  const opened: LeaseStore[] = [];
  const open = async (prefix: string): Promise<LeaseStore> => {
    const store = await openStore(`${server.url}?prefix=${prefix}`);
    opened.push(store);
    return store;
  };
  const recordKey = (prefix: string, name: string): string => `${prefix}{0}r:${name}`;
  /** Writes a corrupt record and indexes its name, as a record leasehold made would be. */
  const corrupt = async (prefix: string, name: string, write: Corrupt): Promise<string> => {
    const key = recordKey(prefix, name);
    await write(redis, key);
    await redis.zadd(`${prefix}{0}index`, 0, name);
    return key;
  };
  const invalid = async (call: Promise<unknown>, resource: string, word: string): Promise<void> => {
    const error = await rejection(call);
    expect(error.code).toBe('RECORD_INVALID');
    expect(error.resource).toBe(resource);
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(word);
  };

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url, { lazyConnect: true });
    await redis.connect();
  });
  afterAll(async () => {
    await Promise.allSettled(opened.map((s) => s.close()));
    redis?.disconnect();
    await server?.stop();
  });

  it.each(FORMS.map((form, i) => [...form, i] as const))(
    '%s: every acquire path, get and list answer RECORD_INVALID and leave it as it was',
    async (_title, write, word, i) => {
      const prefix = `c${i}:`;
      const store = await open(prefix);
      const released = await store.tryAcquire('ok', 'w', 60_000);
      await store.release(released!);
      const held = (await store.tryAcquire('held', 'w', 60_000))!;
      const key = await corrupt(prefix, 'bad', write);
      const before = await dump(redis, key);

      await invalid(store.get('bad'), 'bad', word);
      await invalid(store.list(), 'bad', word);
      await invalid(store.tryAcquire('bad', 'b', 5000), 'bad', word);
      await invalid(store.acquireMany(['ok', 'bad'], 'b', 5000), 'bad', word);
      await invalid(store.acquireAll(['ok', 'bad'], 'b', 5000), 'bad', word);
      await invalid(store.acquireFirst(['held', 'bad', 'ok'], 'b', 5000), 'bad', word);
      await invalid(store.acquireFirst(['bad', 'ok'], 'b', 5000), 'bad', word);
      // Two at once: the second goes coalesced with the first through the transitions script, and
      // only it is refused.
      const [fresh, bad] = await Promise.allSettled([
        store.tryAcquire('fresh', 'b', 5000),
        store.tryAcquire('bad', 'b', 5000),
      ]);
      expect(fresh).toMatchObject({ status: 'fulfilled', value: { owner: 'b', token: 1 } });
      await invalid(
        bad.status === 'rejected' ? Promise.reject(bad.reason) : Promise.resolve(bad.value),
        'bad',
        word,
      );
      const [, badFirst] = await Promise.allSettled([
        store.tryAcquire('fresh2', 'b', 5000),
        store.acquireFirst(['bad', 'ok'], 'b', 5000),
      ]);
      expect(badFirst.status).toBe('rejected');
      await invalid(Promise.reject((badFirst as PromiseRejectedResult).reason), 'bad', word);

      expect(await dump(redis, key)).toEqual(before);
      // The healthy record beside it: nothing of the refused batches was written.
      expect(await store.get('ok')).toMatchObject({ owner: '', token: released!.token });
      expect(await store.get('held')).toMatchObject({ owner: 'w', token: held.token });
      expect(await store.tryAcquire('ok', 'b', 5000)).toMatchObject({ token: released!.token + 1 });
    },
  );

  it('a token of 2^53 − 1 is read, but no acquire takes it (no safe token can follow)', async () => {
    const store = await open('max:');
    const key = await corrupt(
      'max:',
      'top',
      hash({ owner: '', token: String(Number.MAX_SAFE_INTEGER), expiresAt: '0' }),
    );
    expect(await store.get('top')).toMatchObject({ token: Number.MAX_SAFE_INTEGER, owner: '' });
    const word = 'no token can follow it';
    await invalid(store.tryAcquire('top', 'b', 5000), 'top', word);
    await invalid(store.acquireMany(['top'], 'b', 5000), 'top', word);
    await invalid(store.acquireAll(['top'], 'b', 5000), 'top', word);
    await invalid(store.acquireFirst(['top'], 'b', 5000), 'top', word);
    expect(await redis.hgetall(key)).toEqual({
      owner: '',
      token: String(Number.MAX_SAFE_INTEGER),
      expiresAt: '0',
    });
  });

  it('through a node-redis client: the same refusals, on every acquire path, get and list', async () => {
    const client = createClient({ url: server.url });
    client.on('error', () => {});
    await client.connect();
    try {
      const store = await RedisStore.open(client, { prefix: 'nr:' });
      opened.push(store);
      for (const [name, write, word] of [
        ['tok', hash({ owner: 'x', token: 'abc', expiresAt: past }), 'token is "abc"'],
        ['str', (r: Redis, key: string) => r.set(key, '1'), 'not a hash'],
      ] as const) {
        const key = await corrupt('nr:', name, write);
        const before = await dump(redis, key);
        await invalid(store.get(name), name, word);
        await invalid(store.list(), name, word);
        await invalid(store.tryAcquire(name, 'b', 5000), name, word);
        await invalid(store.acquireMany(['ok', name], 'b', 5000), name, word);
        await invalid(store.acquireAll(['ok', name], 'b', 5000), name, word);
        await invalid(store.acquireFirst([name, 'ok'], 'b', 5000), name, word);
        expect(await dump(redis, key)).toEqual(before);
        await redis.del(key);
        await redis.zrem('nr:{0}index', name);
      }
      expect(await store.get('ok')).toBeNull(); // nothing of the refused batches was written
    } finally {
      client.destroy();
    }
  });

  const BECOMES: [string, (redis: Redis, key: string, lease: Lease) => Promise<unknown>][] = [
    ['its token is not a number', (r, key) => r.hset(key, 'token', 'abc')],
    ['its token is negative', (r, key) => r.hset(key, 'token', '-1')],
    ['its token is above 2^53 − 1', (r, key) => r.hset(key, 'token', '9007199254740993')],
    ['its token is missing', (r, key) => r.hdel(key, 'token')],
    ['its owner is missing', (r, key) => r.hdel(key, 'owner')],
    ['its owner is huge', (r, key) => r.hset(key, 'owner', 'o'.repeat(100_000))],
    ['it is a string', (r, key) => r.del(key).then(() => r.set(key, 'x'))],
    ['it is a list', (r, key) => r.del(key).then(() => r.rpush(key, 'x'))],
  ];

  it.each(BECOMES.map((form, i) => [...form, i] as const))(
    'renew and release of a lease whose record became corrupt (%s): not ours, record unchanged',
    async (_title, spoil, i) => {
      const prefix = `r${i}:`;
      const store = await open(prefix);
      const lease = (await store.tryAcquire('job', 'a', 60_000))!;
      const other = (await store.tryAcquire('other', 'a', 60_000))!;
      const key = recordKey(prefix, 'job');
      await spoil(redis, key, lease);
      const before = await dump(redis, key);

      expect(await store.renew(lease)).toBeNull();
      expect(await store.renew(lease, undefined, 'data')).toBeNull();
      expect(await store.writeData(lease, 'data')).toBe(false);
      expect(await store.release(lease)).toBe(false);
      expect(await store.release(lease, 'data')).toBe(false);
      const renewed = await store.renewMany([lease, other]);
      expect(renewed[0]).toBeNull();
      expect(renewed[1]).toMatchObject({ resource: 'other', token: other.token });
      // Two at once: the second release goes coalesced through the transitions script.
      const both = await Promise.all([store.tryAcquire('x', 'a', 5000), store.release(lease)]);
      expect(both[1]).toBe(false);
      expect(await store.releaseMany([lease, other])).toEqual([false, true]);
      expect(await dump(redis, key)).toEqual(before);
    },
  );
});
