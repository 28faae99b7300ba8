import { describe, expect, it } from 'vitest';
import { MemoryStore, type Lease, type LeaseRef } from '../../src/index.js';
import { CHECKED_PER_TURN } from '../../src/core/options.js';
import { rejection } from '../harness/expect-error.js';

// A big renewMany / releaseMany is checked a slice per turn of the event loop (design rule 6),
// every lease before the store is called, and the leases checked are the leases sent.

const SIZE = CHECKED_PER_TURN * 4 + 1;

/** A store holding SIZE leases, and what its batch calls received. */
async function holding() {
  const store = new MemoryStore();
  const names = Array.from({ length: SIZE }, (_, i) => `b/${i}`);
  const leases: Lease[] = [];
  for (let i = 0; i < SIZE; i += 10_000)
    // acquireMany takes 10,000 names at most
    for (const o of await store.acquireMany(names.slice(i, i + 10_000), 'me', 60_000))
      leases.push(o.lease!);
  const received: { renew: (readonly Lease[])[]; release: (readonly LeaseRef[])[] } = {
    renew: [],
    release: [],
  };
  const inner = store as unknown as {
    doRenewMany(l: readonly Lease[], t?: number): Promise<(Lease | null)[]>;
    doReleaseMany(l: readonly LeaseRef[]): Promise<boolean[]>;
  };
  const renew = inner.doRenewMany.bind(store);
  const release = inner.doReleaseMany.bind(store);
  inner.doRenewMany = (l, t) => (received.renew.push(l), renew(l, t));
  inner.doReleaseMany = (l) => (received.release.push(l), release(l));
  return { store, leases, received };
}

describe('batch checks over many turns of the event loop', () => {
  it('lets timers run while a big batch is checked, then renews and releases every lease', async () => {
    const { store, leases, received } = await holding();
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    try {
      const renewed = await store.renewMany(leases, 30_000);
      expect(
        renewed.every((l, i) => l?.resource === leases[i]!.resource && l.ttlMs === 30_000),
      ).toBe(true);
      expect(ticks).toBeGreaterThan(0);
      expect((await store.releaseMany(renewed as Lease[])).every(Boolean)).toBe(true);
    } finally {
      clearInterval(timer);
    }
    expect(received.renew).toHaveLength(1);
    expect(received.release).toHaveLength(1);
  });

  it('refuses the whole batch for one bad lease at the very end, and calls the store for none', async () => {
    const { store, leases, received } = await holding();
    const bad = [...leases.slice(0, -1), { ...leases.at(-1)!, token: 0 }];
    const error = await rejection(store.renewMany(bad));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain(`leases[${SIZE - 1}].token`);
    const refs = [...leases.slice(0, -1), { resource: 'b/x', owner: '', token: 1 }];
    expect((await rejection(store.releaseMany(refs))).message).toContain(
      `leases[${SIZE - 1}].owner`,
    );
    expect(received).toEqual({ renew: [], release: [] });
    expect((await store.get('b/0'))?.owner).toBe('me'); // nothing was released
  });

  it('sends the leases it checked, whatever the caller does to its array meanwhile', async () => {
    const { store, leases, received } = await holding();
    const mine = leases.slice();
    const call = store.releaseMany(mine);
    // After the first slice was checked, during a turn of the loop the call yielded.
    setImmediate(() => {
      mine[0] = { resource: '', owner: '', token: -1 } as unknown as Lease;
      mine.length = 1;
    });
    const released = await call;
    expect(released).toHaveLength(SIZE);
    expect(released.every(Boolean)).toBe(true);
    expect(received.release[0]![0]).toBe(leases[0]);
    expect(received.release[0]).toHaveLength(SIZE);
  });
});
