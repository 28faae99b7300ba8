import { expect, it } from 'vitest';
import { describeStores } from './stores.js';

const ODD_NAMES = [
  'a%b',
  'a_b',
  'axb',
  "quote'single",
  'quote"double',
  'back\\slash',
  'emoji/🚀/ok',
  'glob*?[x]',
  "sql'; DROP TABLE leases; --",
  'space in name',
  'tab\tname',
  'line\nbreak',
  'ünïcødé/名前',
  '\u{10FFFF}max',
  'x'.repeat(512),
  '€'.repeat(170), // 510 bytes
];

describeStores('list and names', ({ open }) => {
  it('round-trips any name within the limits exactly', async () => {
    const store = await open();
    for (const name of ODD_NAMES) {
      const lease = await store.tryAcquire(name, `owner of ${name.slice(0, 20)}`, 5000);
      expect(lease?.resource).toBe(name);
      expect((await store.get(name))!.resource).toBe(name);
    }
    const listed = (await store.list({ limit: 100 })).map((r) => r.resource);
    expect([...listed].sort()).toEqual([...ODD_NAMES].sort());
  });

  it('matches a prefix literally: % and _ are not wildcards', async () => {
    const store = await open();
    for (const name of ['50%/a', '50%/b', '50x/c', '5000/d', 'a_1', 'ab1', 'a_2', 'a%'])
      await store.tryAcquire(name, 'o', 5000);
    expect((await store.list({ prefix: '50%' })).map((r) => r.resource)).toEqual([
      '50%/a',
      '50%/b',
    ]);
    expect((await store.list({ prefix: 'a_' })).map((r) => r.resource)).toEqual(['a_1', 'a_2']);
    expect((await store.list({ prefix: 'a%' })).map((r) => r.resource)).toEqual(['a%']);
    expect(await store.list({ prefix: 'zzz' })).toEqual([]);
  });

  it('lists in code-point order and honours limit', async () => {
    const store = await open();
    const names = ['b', 'a', 'é', 'Z', 'aa', '🚀', '\uffff'];
    for (const name of names) await store.tryAcquire(name, 'o', 5000);
    const all = (await store.list()).map((r) => r.resource);
    expect(all).toEqual(['Z', 'a', 'aa', 'b', 'é', '\uffff', '🚀']);
    expect((await store.list({ limit: 2 })).map((r) => r.resource)).toEqual(['Z', 'a']);
  });

  it('a prefix ending in the highest code point still finds its names', async () => {
    const store = await open();
    await store.tryAcquire('p\u{10FFFF}', 'o', 5000);
    await store.tryAcquire('p\u{10FFFF}x', 'o', 5000);
    await store.tryAcquire('q', 'o', 5000);
    expect((await store.list({ prefix: 'p\u{10FFFF}' })).map((r) => r.resource)).toEqual([
      'p\u{10FFFF}',
      'p\u{10FFFF}x',
    ]);
  });

  it('lists released records with an empty owner', async () => {
    const store = await open();
    const lease = await store.tryAcquire('gone', 'o', 5000);
    await store.release(lease!);
    expect(await store.list({ prefix: 'gone' })).toEqual([
      { resource: 'gone', owner: '', token: 1, expiresAt: 0 },
    ]);
  });
});
