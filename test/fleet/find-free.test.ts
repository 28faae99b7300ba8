import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LeaseRecord } from '../../src/core/lease.js';
import { findFree } from '../../src/fleet/find-free.js';
import { MemoryStore } from '../../src/stores/memory/memory-store.js';

const isFree = (record: LeaseRecord): boolean => record.owner === '';

/** A store with `held` names held by 'other' and `released` names released. */
async function storeWith(held: Iterable<string>, released: Iterable<string>): Promise<MemoryStore> {
  const store = new MemoryStore();
  const names = [...held];
  for (let i = 0; i < names.length; i += 10_000)
    await store.acquireMany(names.slice(i, i + 10_000), 'other', 60_000);
  const leases = await store.acquireMany([...released], 'gone', 60_000);
  await store.releaseMany(leases.map((outcome) => outcome.lease!));
  return store;
}

/** Counts the records the store hands out through `list`. */
function counting(store: MemoryStore): { store: MemoryStore; read: () => number } {
  let read = 0;
  const list = store.list.bind(store);
  store.list = async (options) => {
    const page = await list(options);
    read += page.length;
    return page;
  };
  return { store, read: () => read };
}

describe('findFree', () => {
  it('reads only around the wanted names when they share no prefix with the rest', async () => {
    const unrelated = Array.from(
      { length: 20_000 },
      (_, i) => `other/${String(i).padStart(5, '0')}`,
    );
    const { store, read } = counting(await storeWith(['z1', ...unrelated], ['a1']));
    const result = await findFree({
      store,
      prefix: '',
      wanted: new Set(['a1', 'z1', 'q-missing']),
      skip: new Set(),
      enough: Infinity,
      isFree,
      pageSize: 500,
    });
    expect(result.free.sort()).toEqual(['a1', 'q-missing']);
    expect(result.live.map((r) => r.resource)).toEqual(['z1']);
    // Two laps of short pages, each jumping to just before the next wanted name: not 20,000 records.
    expect(read()).toBeLessThanOrEqual(4 * 16);
    expect(result.recordsRead).toBe(read());
  });

  it('finds exactly the free or missing wanted names, whatever the records, pages and start', async () => {
    const name = fc
      .array(fc.constantFrom('a', 'b', 'z', 'é', '😀', '/'), { minLength: 1, maxLength: 4 })
      .map((chars) => chars.join(''));
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.tuple(name, fc.constantFrom('held', 'released', 'absent')), {
          selector: ([n]) => n,
          maxLength: 40,
        }),
        fc.uniqueArray(name, { maxLength: 25 }),
        fc.integer({ min: 1, max: 6 }),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        async (records, extraWanted, pageSize, startAt) => {
          const held = records.filter(([, s]) => s === 'held').map(([n]) => n);
          const released = records.filter(([, s]) => s === 'released').map(([n]) => n);
          const wanted = new Set([
            ...records.filter((_, i) => i % 2 === 0).map(([n]) => n),
            ...extraWanted,
          ]);
          const store = await storeWith(held, released);
          const result = await findFree({
            store,
            prefix: '',
            wanted,
            skip: new Set(),
            enough: Infinity,
            isFree,
            pageSize,
            random: () => startAt,
          });
          const heldSet = new Set(held);
          const expectedFree = [...wanted].filter((n) => !heldSet.has(n)).sort();
          const expectedLive = [...wanted].filter((n) => heldSet.has(n)).sort();
          expect([...result.free].sort()).toEqual(expectedFree);
          expect(result.live.map((r) => r.resource).sort()).toEqual(expectedLive);
        },
      ),
      { numRuns: 300 },
    );
  });
});
