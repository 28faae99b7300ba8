import { expect, it } from 'vitest';
import type { Lease, LeaseStore } from '../../src/index.js';
import { shuffled } from '../harness/shuffled.js';

/**
 * The batch tests the SQL stores share: racing batches that take row locks in different orders
 * must never deadlock, and the largest batch allowed goes through the store's chunked statements.
 * They rely on what these stores promise beyond the contract (every refusal names its holder,
 * tokens go up by exactly one per grant), so they are not in the conformance suite.
 * `open` gives a store on a fresh table.
 */
export function sqlBatchRaces(open: () => Promise<LeaseStore>): void {
  it("batches racing the holder's renewMany and releaseMany never deadlock with them", async () => {
    const store = await open();
    const names = Array.from({ length: 400 }, (_, i) => `rr/${String(i).padStart(3, '0')}`);
    // Taken one by one in a random order, so the table's physical order is not name order.
    const leases: Lease[] = [];
    for (const name of shuffled(names, 7))
      leases.push((await store.tryAcquire(name, 'a', 60_000))!);
    for (let round = 0; round < 10; round++) {
      const [renewed, b, c] = await Promise.all([
        store.renewMany(shuffled(leases, round), 60_000),
        store.acquireMany(names, 'b', 60_000),
        store.acquireMany(shuffled(names, round + 100), 'c', 60_000),
      ]);
      expect(renewed.filter((lease) => lease === null)).toEqual([]);
      for (const outcomes of [b, c])
        expect(outcomes.filter((o) => o.lease || o.holder?.owner !== 'a')).toEqual([]);
    }
    const [released, after] = await Promise.all([
      store.releaseMany(shuffled(leases, 3)),
      store.acquireMany(shuffled(names, 4), 'b', 60_000),
    ]);
    expect(released).toEqual(leases.map(() => true));
    // Each name went to b or stayed a's until its release: never both, never lost.
    for (const o of after) {
      const record = (await store.get(o.resource))!;
      expect(record.owner).toBe(o.lease ? 'b' : '');
    }
  });

  it('racing batches over new and free rows in different orders never deadlock', async () => {
    const store = await open();
    const names = Array.from({ length: 400 }, (_, i) => `dl/${String(i).padStart(3, '0')}`);
    const held = await store.acquireMany(
      names.filter((_, i) => i % 2 === 1),
      'setup',
      60_000,
    );
    await store.releaseMany(held.map((o) => o.lease!));
    for (let round = 1; round <= 5; round++) {
      const orders = [0, 1, 2, 3].map((k) => shuffled(names, round * 10 + k));
      const results = await Promise.all(
        orders.map((o, k) => store.acquireMany(o, `w${k}`, 60_000)),
      );
      const winners = new Map<string, number>();
      for (const outcomes of results)
        for (const o of outcomes) if (o.lease) winners.set(o.resource, o.lease.token);
      expect(winners.size).toBe(names.length);
      expect(results.flat().filter((o) => o.lease)).toHaveLength(names.length);
      for (const [i, name] of names.entries())
        expect([name, winners.get(name)]).toEqual([name, round + (i % 2)]);
      const leases = results.flat().flatMap((o) => (o.lease ? [o.lease] : []));
      expect(await store.releaseMany(leases)).toEqual(leases.map(() => true));
    }
  });

  it('takes the largest batch allowed: 10,000 names of 512 bytes', async () => {
    const store = await open();
    const names = Array.from(
      { length: 10_000 },
      (_, i) => 'é'.repeat(253) + String(i).padStart(6, '0'),
    );
    expect(names.map((n) => Buffer.byteLength(n))).toEqual(names.map(() => 512));
    const outcomes = await store.acquireMany(names, 'o'.repeat(256), 60_000);
    expect(outcomes.filter((o) => o.lease?.token === 1)).toHaveLength(10_000);
    expect(await store.get(names[9999]!)).toMatchObject({ resource: names[9999], token: 1 });
  });
}
