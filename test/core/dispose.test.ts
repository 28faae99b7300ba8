import { describe, expect, it } from 'vitest';
import {
  elect,
  LeaseError,
  LeaseManager,
  MemoryStore,
  openStore,
  type Election,
  type HeldLease,
  type LeaseStore,
} from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';

async function code(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'resolved',
    (e: unknown) => (e instanceof LeaseError ? e.code : String(e)),
  );
}

describe('await using', () => {
  it('closes a store at the end of the block', async () => {
    let outside: MemoryStore | undefined;
    {
      await using store = new MemoryStore();
      outside = store;
      expect(await store.tryAcquire('job', 'me', 1000)).toMatchObject({ token: 1 });
    }
    expect(outside.isClosed).toBe(true);
    expect(await code(outside.get('job'))).toBe('STORE_UNAVAILABLE');
  });

  it('closes a store from openStore at the end of the block', async () => {
    let outside: LeaseStore | undefined;
    {
      await using store = await openStore('sqlite::memory:');
      outside = store;
      expect(await store.tryAcquire('job', 'me', 1000)).toMatchObject({ token: 1 });
    }
    expect(await code(outside.get('job'))).toBe('STORE_UNAVAILABLE');
  });

  it('stops a LeaseManager at the end of the block: work aborted, leases released', async () => {
    const clock = new ManualClock();
    await using store = new MemoryStore({ clock });
    const signals: AbortSignal[] = [];
    let outside: LeaseManager | undefined;
    {
      await using manager = new LeaseManager({
        store,
        owner: 'w1',
        clock,
        resources: ['a', 'b'],
        settleMs: 0,
        onAcquired: (lease: HeldLease) => void signals.push(lease.signal),
      });
      outside = manager;
      await manager.start();
      expect(manager.held().map((l) => l.resource)).toEqual(['a', 'b']);
    }
    expect(outside.held()).toEqual([]);
    expect(signals.map((s) => s.aborted)).toEqual([true, true]);
    expect(await store.get('a')).toMatchObject({ owner: '' });
    expect(await store.get('b')).toMatchObject({ owner: '' });
  });

  it('stops an election at the end of the block, releasing the leadership lease', async () => {
    const clock = new ManualClock();
    await using store = new MemoryStore({ clock });
    const demoted: string[] = [];
    let outside: Election | undefined;
    {
      await using election = elect({
        store,
        name: 'scheduler',
        owner: 'me',
        ttlMs: 1000,
        clock,
        onElected: () => undefined,
        onDemoted: (reason) => void demoted.push(reason),
      });
      outside = election;
      await clock.advance(100);
      expect(election.isLeader()).toBe(true);
    }
    expect(outside.isLeader()).toBe(false);
    expect(demoted).toEqual(['stopped']);
    expect(await store.get('election/scheduler')).toMatchObject({ owner: '' });
  });
});
