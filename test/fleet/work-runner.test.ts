import { afterEach, describe, expect, it } from 'vitest';
import { LeaseClient, LeaseError, MemoryStore, type HeldLease } from '../../src/index.js';
import { FleetReporter } from '../../src/fleet/fleet-reporter.js';
import { WorkRunner } from '../../src/fleet/work-runner.js';
import { ManualClock } from '../../src/testing/index.js';
import { FaultyStore } from '../harness/faulty-store.js';

const clients: LeaseClient[] = [];
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()));
});

function rig(
  work?: (lease: HeldLease) => unknown,
  onLost?: (lease: HeldLease, error: LeaseError) => void,
) {
  const clock = new ManualClock();
  const store = new FaultyStore(new MemoryStore({ clock }));
  const client = new LeaseClient({ store, owner: 'me', ttlMs: 12_000, clock });
  clients.push(client);
  const events: string[] = [];
  const wanted = new Set(['a', 'b', 'c']);
  let stopping = false;
  const runner = new WorkRunner({
    client,
    clock,
    report: new FleetReporter('me', 'g', clock, undefined),
    work,
    onLost,
    emit: (event, ...args) => {
      const lease = args[0] as HeldLease;
      events.push(`${event} ${lease.resource}${event === 'handoff' ? ` ${String(args[1])}` : ''}`);
    },
    failed: (error) => events.push(`failed ${String(error)}`),
    granted: (lease) => events.push(`granted ${lease.resource}`),
    wants: (resource) => wanted.has(resource),
    stopping: () => stopping,
  });
  return { clock, store, client, runner, events, wanted, stop: () => (stopping = true) };
}

/** Lets every pending promise chain run (the memory store answers within the turn). */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('WorkRunner', () => {
  it('runs the work of a wanted lease; gives back one no longer wanted, or granted while stopping', async () => {
    const started: string[] = [];
    const { client, runner, events, wanted, stop } = rig(
      (lease) => void started.push(lease.resource),
    );
    const a = (await client.tryAcquire('a'))!;
    runner.begin(a);
    await settled();
    expect(events).toEqual(['granted a', 'acquired a']);
    expect(started).toEqual(['a']);
    wanted.delete('b');
    const b = (await client.tryAcquire('b'))!;
    runner.begin(b);
    stop();
    const c = (await client.tryAcquire('c'))!;
    runner.begin(c);
    await settled();
    expect(events).toEqual(['granted a', 'acquired a', 'granted b', 'granted c']);
    expect(started).toEqual(['a']);
    expect(b.state).toBe('released');
    expect(c.state).toBe('released');
    expect(a.state).toBe('held');
  });

  it('gives the lease of failed work back, and tells of it', async () => {
    const { client, runner, events } = rig(() => {
      throw new Error('boom');
    });
    const a = (await client.tryAcquire('a'))!;
    runner.begin(a);
    await settled();
    expect(events).toEqual(['granted a', 'acquired a', 'work-failed a']);
    expect(a.state).toBe('released');
  });

  it('tells of a lost lease with the event first, then onLost', async () => {
    const told: string[] = [];
    const { client, runner, events } = rig(undefined, (lease, error) =>
      told.push(`${lease.resource} ${error.code} after ${events.join(', ')}`),
    );
    const a = (await client.tryAcquire('a'))!;
    runner.lost(a, new LeaseError('LEASE_LOST', 'gone'));
    expect(told).toEqual(['a LEASE_LOST after lost a']);
  });

  it('hands leases over: revokes them, waits for their work, then releases them in one call', async () => {
    const ended: string[] = [];
    const { client, store, runner, events } = rig(
      (lease) =>
        new Promise<void>((resolve) =>
          lease.signal.addEventListener('abort', () => {
            ended.push(lease.resource);
            resolve();
          }),
        ),
    );
    const leases = await Promise.all(['a', 'b'].map(async (r) => (await client.tryAcquire(r))!));
    for (const lease of leases) runner.begin(lease);
    await settled(); // the work runs from the next turn
    events.length = 0;
    const handing = runner.handOff(leases, 'balance');
    expect(runner.isLeaving(leases[0]!)).toBe(true);
    expect(runner.leavingCount()).toBe(2);
    await handing;
    expect(ended.sort()).toEqual(['a', 'b']);
    expect(events).toEqual(['handoff a balance', 'handoff b balance']);
    expect(store.calls.releaseMany).toBe(1);
    expect(leases.map((l) => l.state)).toEqual(['released', 'released']);
    expect(runner.isLeaving(leases[0]!)).toBe(false);
  });
});
