import { channel, subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LeaseClient, LeaseholdChannel } from '../../src/index.js';
import { Fleet, names } from '../fleet/fleet-rig.js';
import { clientRig, HEARTBEAT, RENEW_MS, TTL } from '../observability/scenarios.js';

const ALL = Object.values(LeaseholdChannel);

/** Drives real leases through every transition that publishes, on every channel. */
async function everything(): Promise<void> {
  const { clock, link, a, b, close } = clientRig();
  try {
    const r1 = (await a.tryAcquire('obs/r1'))!;
    await b.tryAcquire('obs/r1'); // refused
    await clock.advance(300); // one renewal
    await r1.release();
    link.mode = 'fail';
    await a.tryAcquire('obs/r2').catch(() => undefined); // a store error
    link.mode = 'pass';
    const r4 = (await a.tryAcquire('obs/r4'))!;
    link.mode = 'hang';
    await clock.advance(3 * TTL); // at-risk, then lost
    expect(r4.state).toBe('lost');
  } finally {
    await close();
  }
  // A fleet: a takeover of a lapsed lease, then a handoff to a joining worker.
  const resources = names(2, 'obs/');
  const fleet = new Fleet({ resources, ttlMs: TTL, heartbeatMs: HEARTBEAT, reconcileMs: 500 });
  const outsider = new LeaseClient({
    store: fleet.store,
    owner: 'outsider',
    ttlMs: TTL,
    autoRenew: false,
    clock: fleet.clock,
  });
  try {
    await outsider.tryAcquire(resources[0]!);
    await fleet.join();
    await fleet.clock.advance(1500);
    await fleet.join();
    await fleet.clock.advance(2500);
    expect(fleet.counts()).toEqual([1, 1]);
  } finally {
    await outsider.close();
    await fleet.stopAll();
  }
}

const listeners: [string, (message: unknown) => void][] = [];
afterEach(() => {
  for (const [name, listener] of listeners.splice(0)) unsubscribe(name, listener);
  vi.restoreAllMocks();
});

function record(): Map<string, unknown[]> {
  const seen = new Map<string, unknown[]>(ALL.map((name) => [name, []]));
  for (const name of ALL) {
    const listener = (message: unknown): void => void seen.get(name)!.push(message);
    subscribe(name, listener);
    listeners.push([name, listener]);
  }
  return seen;
}

describe('diagnostics channels', () => {
  it('are named leasehold:<area>:<event>', () => {
    expect(LeaseholdChannel).toEqual({
      leaseAcquired: 'leasehold:lease:acquired',
      leaseRenewed: 'leasehold:lease:renewed',
      leaseAtRisk: 'leasehold:lease:at-risk',
      leaseLost: 'leasehold:lease:lost',
      leaseReleased: 'leasehold:lease:released',
      acquireAttempt: 'leasehold:acquire:attempt',
      storeError: 'leasehold:store:error',
      fleetHandoff: 'leasehold:fleet:handoff',
      fleetTakeover: 'leasehold:fleet:takeover',
      fleetLoad: 'leasehold:fleet:load',
      storeFinding: 'leasehold:store:finding',
    });
  });

  it('build and publish nothing while nobody subscribes, and publish on every channel once someone does', async () => {
    const published = ALL.map((name) => {
      expect(channel(name).hasSubscribers).toBe(false);
      return vi.spyOn(channel(name), 'publish');
    });
    await everything();
    for (const spy of published) expect(spy).not.toHaveBeenCalled();
    // A subscription makes a channel active (a new prototype): spies on the inactive one go.
    vi.restoreAllMocks();

    const seen = record();
    await everything();
    for (const name of ALL) expect(seen.get(name)!.length, name).toBeGreaterThan(0);
  });

  it('carry the documented message shapes', async () => {
    const seen = record();
    const { clock, link, a, b, close } = clientRig();
    try {
      const r1 = (await a.tryAcquire('obs/r1'))!;
      await b.tryAcquire('obs/r1');
      await clock.advance(300);
      await r1.release();
      link.mode = 'fail';
      await expect(a.tryAcquire('obs/r2')).rejects.toThrow();
      link.mode = 'pass';
      const r3 = (await a.tryAcquire('obs/r3'))!;
      link.mode = 'hang';
      await clock.advance(3 * TTL);
      expect(r3.state).toBe('lost');
    } finally {
      await close();
    }
    const owner = 'obs-a';
    const start = Date.UTC(2030, 0, 1);
    expect(seen.get(LeaseholdChannel.acquireAttempt)).toEqual([
      { owner, resource: 'obs/r1', result: 'acquired', durationMs: 0, token: 1 },
      { owner: 'obs-b', resource: 'obs/r1', result: 'held-by-other', durationMs: 0 },
      { owner, resource: 'obs/r2', result: 'error', durationMs: 0, code: 'STORE_UNAVAILABLE' },
      { owner, resource: 'obs/r3', result: 'acquired', durationMs: 0, token: 1 },
    ]);
    expect(seen.get(LeaseholdChannel.leaseAcquired)).toEqual([
      { owner, resource: 'obs/r1', token: 1, ttlMs: TTL, expiresAt: start + TTL },
      { owner, resource: 'obs/r3', token: 1, ttlMs: TTL, expiresAt: start + 300 + TTL },
    ]);
    expect(seen.get(LeaseholdChannel.leaseRenewed)).toEqual([
      {
        owner,
        resource: 'obs/r1',
        token: 1,
        expiresAt: start + HEARTBEAT + RENEW_MS + TTL,
        durationMs: RENEW_MS,
      },
    ]);
    expect(seen.get(LeaseholdChannel.leaseReleased)).toEqual([
      { owner, resource: 'obs/r1', token: 1, heldMs: 300 },
    ]);
    expect(seen.get(LeaseholdChannel.leaseAtRisk)).toEqual([
      {
        owner,
        resource: 'obs/r3',
        token: 1,
        reason: expect.stringMatching(/less than a third of the TTL is left/),
        remainingMs: expect.any(Number),
      },
    ]);
    expect(seen.get(LeaseholdChannel.leaseLost)).toEqual([
      {
        owner,
        resource: 'obs/r3',
        token: 1,
        cause: 'store-error',
        message: expect.stringContaining('renewals were failing'),
      },
    ]);
    expect(seen.get(LeaseholdChannel.storeError)).toEqual([
      {
        owner,
        operation: 'tryAcquire',
        code: 'STORE_UNAVAILABLE',
        message: 'tryAcquire: connection refused (injected)',
        count: 1,
      },
      {
        owner,
        operation: 'renewMany',
        code: 'STORE_UNAVAILABLE',
        message: 'renewMany got no answer within 500 ms',
        count: 1,
      },
      {
        owner,
        operation: 'renewMany',
        code: 'STORE_UNAVAILABLE',
        message: 'renewMany got no answer within 500 ms',
        count: 1,
      },
    ]);
  });

  it('tell a fleet’s handoffs and takeovers, with their reasons and latencies', async () => {
    const seen = record();
    const resources = names(2, 'obs/');
    const fleet = new Fleet({ resources, ttlMs: TTL, heartbeatMs: HEARTBEAT, reconcileMs: 500 });
    const outsider = new LeaseClient({
      store: fleet.store,
      owner: 'outsider',
      ttlMs: TTL,
      autoRenew: false,
      clock: fleet.clock,
    });
    try {
      const stale = (await outsider.tryAcquire(resources[0]!))!;
      const w1 = await fleet.join();
      let grantedAt = 0;
      w1.manager.on('acquired', (lease) => (grantedAt = lease.expiresAt - lease.ttlMs));
      await fleet.clock.advance(1500);
      expect(grantedAt).toBeGreaterThan(stale.expiresAt);
      expect(seen.get(LeaseholdChannel.fleetTakeover)).toEqual([
        {
          group: 'default',
          owner: 'w1',
          resource: resources[0],
          token: 2,
          previousOwner: 'outsider',
          previousToken: 1,
          latencyMs: grantedAt - stale.expiresAt,
        },
      ]);
      await fleet.join();
      await fleet.clock.advance(2500);
      const handoffs = seen.get(LeaseholdChannel.fleetHandoff)!;
      expect(handoffs).toEqual([
        {
          group: 'default',
          owner: 'w1',
          resource: expect.any(String),
          token: expect.any(Number),
          reason: 'balance',
          durationMs: expect.any(Number),
        },
      ]);
      expect((handoffs[0] as { durationMs: number }).durationMs).toBeGreaterThanOrEqual(0);
    } finally {
      await outsider.close();
      await fleet.stopAll();
    }
  });
});
