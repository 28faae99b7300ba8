import { expect } from 'vitest';
import { LeaseClient, MemoryStore, type LeaseClientOptions } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { FaultyStore } from '../harness/faulty-store.js';
import { Fleet, names } from '../fleet/fleet-rig.js';

/** The metrics leasehold records, by their key in both stacks' tables. */
export type MetricKey =
  | 'held'
  | 'attempts'
  | 'renew'
  | 'lost'
  | 'atRisk'
  | 'takeover'
  | 'handoff'
  | 'storeErrors'
  | 'fleetLoad'
  | 'fleetFairLoad';

/** One scrape of the metrics, as each adapter's test reads it back from its stack. */
export interface MetricsView {
  /** A counter's or gauge's value for exactly these labels (0 when never recorded). */
  value(metric: MetricKey, labels?: Record<string, string>): number;
  /** A histogram's count and sum (in seconds) for exactly these labels. */
  histogram(metric: MetricKey, labels?: Record<string, string>): { count: number; sum: number };
  /** Every label set recorded for a counter. */
  labelSets(metric: MetricKey): Record<string, string>[];
}

export const TTL = 1000;
export const HEARTBEAT = 250;
/** How long every renewal takes at the store in the client scenario, in ms. */
export const RENEW_MS = 10;

/** `store`, with `renewMany` answering `ms` later on `clock`. */
export function slowRenewals(store: MemoryStore, clock: ManualClock, ms: number): MemoryStore {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'renewMany') {
        return async (...args: Parameters<MemoryStore['renewMany']>) => {
          await new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
          return target.renewMany(...args);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}

/** Two clients on one manual clock: `a` reaches the store through a faulty, slow link. */
export function clientRig(options: Partial<LeaseClientOptions> = {}) {
  const clock = new ManualClock();
  const real = new MemoryStore({ clock });
  const link = new FaultyStore(slowRenewals(real, clock, RENEW_MS));
  const common = { ttlMs: TTL, heartbeatMs: HEARTBEAT, clock };
  const a = new LeaseClient({ store: link, owner: 'obs-a', ...common, ...options });
  const b = new LeaseClient({ store: real, owner: 'obs-b', ...common });
  const close = async (): Promise<void> => {
    link.mode = 'pass';
    link.resumeHung();
    await Promise.allSettled([a.close(), b.close()]);
  };
  return { clock, real, link, a, b, close };
}

/**
 * Real leases on a memory store and a manual clock, through every transition a client knows;
 * after each step the metrics read back must match what happened.
 */
export async function clientScenario(read: () => Promise<MetricsView>): Promise<void> {
  const { clock, link, a, b, close } = clientRig();
  try {
    // Acquire: two grants, one refusal.
    await a.tryAcquire('obs/r1');
    const r2 = (await a.tryAcquire('obs/r2'))!;
    expect(await b.tryAcquire('obs/r1')).toBeNull();
    let m = await read();
    expect(m.value('held')).toBe(2);
    expect(m.value('attempts', { result: 'acquired' })).toBe(2);
    expect(m.value('attempts', { result: 'held-by-other' })).toBe(1);
    expect(m.histogram('renew')).toEqual({ count: 0, sum: 0 });

    // Renew: beats at 250 and 510 ms, each one renewMany of both leases answered 10 ms later.
    await clock.advance(600);
    m = await read();
    const renew = m.histogram('renew');
    expect(renew.count).toBe(4);
    expect(renew.sum).toBeCloseTo((4 * RENEW_MS) / 1000, 9);

    // Release.
    await r2.release();
    expect((await read()).value('held')).toBe(1);

    // Lost, taken: the store's time jumps past the record's expiry, another owner takes it,
    // and the next renewal finds it gone.
    clock.stepWall(5 * TTL);
    expect(await b.tryAcquire('obs/r1')).not.toBeNull();
    await clock.advance(200);
    expect(a.size).toBe(0);
    m = await read();
    expect(m.value('lost', { cause: 'taken' })).toBe(1);
    expect(m.value('held')).toBe(1); // b's
    expect(m.value('attempts', { result: 'acquired' })).toBe(3);
    await b.close();
    expect((await read()).value('held')).toBe(0);

    // A failing store: the attempt and the store error are counted.
    link.mode = 'fail';
    await expect(a.tryAcquire('obs/r3')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    link.mode = 'pass';
    m = await read();
    expect(m.value('attempts', { result: 'error' })).toBe(1);
    expect(m.value('storeErrors', { code: 'STORE_UNAVAILABLE', operation: 'tryAcquire' })).toBe(1);

    // A hung store: the lease turns at-risk, renewals time out, and it is lost at its deadline.
    const r5 = (await a.tryAcquire('obs/r5'))!;
    link.mode = 'hang';
    const sent = link.calls.renewMany;
    await clock.advance(3 * TTL);
    expect(r5.state).toBe('lost');
    const hung = link.calls.renewMany - sent;
    expect(hung).toBe(2); // one at the beat, one retry; each timed out after two beats
    m = await read();
    expect(m.value('atRisk')).toBe(1);
    expect(m.value('lost', { cause: 'store-error' })).toBe(1);
    expect(m.value('storeErrors', { code: 'STORE_UNAVAILABLE', operation: 'renewMany' })).toBe(
      hung,
    );
    expect(m.value('held')).toBe(0);
    // The hung renewals land late: the lost lease is released, nothing more is counted.
    link.mode = 'pass';
    link.resumeHung();
    await clock.advance(100);

    // A frozen event loop (GC pause, SIGSTOP): the deadline passed with renewals not failing.
    await a.tryAcquire('obs/r6');
    clock.jump(2 * TTL);
    await clock.advance(1);
    m = await read();
    expect(m.value('lost', { cause: 'expired' })).toBe(1);

    // A grant that arrives after its validity deadline is given back, never handed out.
    link.mode = 'hang';
    const late = a.tryAcquire('obs/r7');
    await clock.advance(2 * TTL);
    link.mode = 'pass';
    link.resumeHung();
    expect(await late).toBeNull();

    m = await read();
    expect(m.value('held')).toBe(0);
    expect(m.value('attempts', { result: 'acquired' })).toBe(5);
    expect(m.value('attempts', { result: 'too-late' })).toBe(1);
    expect(m.value('attempts', { result: 'held-by-other' })).toBe(1);
    expect(m.value('attempts', { result: 'error' })).toBe(1);
    expect(m.value('lost', { cause: 'taken' })).toBe(1);
    expect(m.value('atRisk')).toBe(1);
    expect(m.histogram('renew').count).toBe(4);
    expect(m.labelSets('storeErrors')).toHaveLength(2);
    expect(m.histogram('takeover').count).toBe(0);
    expect(m.histogram('handoff', { reason: 'balance' }).count).toBe(0);
  } finally {
    await close();
  }
}

/** Reads the `expiresAt` of a worker's membership record from the store. */
async function memberExpiry(fleet: Fleet, owner: string): Promise<number> {
  const records = await fleet.store.list({ prefix: 'leasehold/members/' });
  const mine = records.filter((r) => r.owner === owner && !r.resource.endsWith('~generation'));
  expect(mine).toHaveLength(1);
  return mine[0]!.expiresAt;
}

/**
 * A small fleet: the first worker takes over a resource whose holder stopped renewing, a second
 * worker joins (the first hands two leases over), then dies (its renewals never arrive), and the
 * first takes its leases over once they expire.
 */
export async function fleetScenario(
  read: () => Promise<MetricsView>,
  stop: () => void,
): Promise<void> {
  const resources = names(4, 'obs/');
  const fleet = new Fleet({ resources, ttlMs: TTL, heartbeatMs: HEARTBEAT, reconcileMs: 500 });
  // A holder that stops renewing (a crashed process would look the same to the store).
  const outsider = new LeaseClient({
    store: fleet.store,
    owner: 'outsider',
    ttlMs: TTL,
    autoRenew: false,
    clock: fleet.clock,
  });
  try {
    const stale = (await outsider.tryAcquire(resources[3]!))!;
    await fleet.clock.advance(100);
    const w1 = await fleet.join();
    expect(w1.manager.held()).toHaveLength(3);
    const grantedAt = new Map<string, number>();
    w1.manager.on('acquired', (lease) =>
      grantedAt.set(lease.resource, lease.expiresAt - lease.ttlMs),
    );
    await fleet.clock.advance(1500);
    expect(w1.manager.held()).toHaveLength(4);
    expect(stale.state).toBe('lost');
    let m = await read();
    const first = m.histogram('takeover');
    expect(first.count).toBe(1);
    expect(first.sum).toBeCloseTo((grantedAt.get(resources[3]!)! - stale.expiresAt) / 1000, 9);
    expect(first.sum).toBeGreaterThanOrEqual(0);
    expect(m.value('lost', { cause: 'expired' })).toBe(1);
    expect(m.value('atRisk')).toBe(1);

    const handoffs: string[] = [];
    w1.manager.on('handoff', (lease, reason) => handoffs.push(`${lease.resource}:${reason}`));
    const w2 = await fleet.join();
    await fleet.clock.advance(2500);
    expect(fleet.counts()).toEqual([2, 2]);
    m = await read();
    for (const w of [w1, w2]) {
      expect(m.value('fleetLoad', { group: 'default', owner: w.id })).toBe(2);
      expect(m.value('fleetFairLoad', { group: 'default', owner: w.id })).toBe(2);
    }
    expect(handoffs).toHaveLength(2);
    expect(m.histogram('handoff', { reason: 'balance' }).count).toBe(2);
    expect(m.histogram('handoff', { reason: 'unwanted' }).count).toBe(0);
    // Each manager also holds its membership lease.
    expect(m.value('held')).toBe(4 + 2);
    expect(m.histogram('takeover').count).toBe(1);

    // w2 dies: its renewals never reach the store.
    const orphaned = w2.manager
      .held()
      .map((l) => ({ resource: l.resource, expiresAt: l.expiresAt }));
    const w2Member = await memberExpiry(fleet, w2.id);
    w2.link.mode = 'hang';
    const sent = w2.link.calls.renewMany;
    for (let t = 0; t < 4 * TTL && w1.manager.held().length < 4; t += 50)
      await fleet.clock.advance(50);
    expect(w1.manager.held()).toHaveLength(4);
    await fleet.clock.advance(TTL); // every hung renewal of w2 has timed out by now
    m = await read();
    const takeover = m.histogram('takeover');
    expect(takeover.count).toBe(1 + orphaned.length);
    // The unowned gap of each resource: from its holder's expiry (seen on the resource's record,
    // or on the holder's membership record, renewed in the same beats) to w1's grant.
    let least = first.sum * 1000;
    let most = first.sum * 1000;
    for (const { resource, expiresAt } of orphaned) {
      const granted = grantedAt.get(resource)!;
      expect(granted).toBeGreaterThan(expiresAt);
      least += granted - Math.max(expiresAt, w2Member);
      most += granted - Math.min(expiresAt, w2Member);
    }
    expect(takeover.sum).toBeGreaterThanOrEqual(least / 1000 - 1e-9);
    expect(takeover.sum).toBeLessThanOrEqual(most / 1000 + 1e-9);
    // w2 lost its two leases and its membership, each after turning at-risk.
    expect(m.value('lost', { cause: 'store-error' })).toBe(3);
    expect(m.value('atRisk')).toBe(1 + 3);
    const hung = w2.link.calls.renewMany - sent;
    expect(hung).toBeGreaterThan(0);
    expect(m.value('storeErrors', { code: 'STORE_UNAVAILABLE', operation: 'renewMany' })).toBe(
      hung,
    );
    expect(m.value('held')).toBe(4 + 1);
    expect(m.histogram('handoff', { reason: 'balance' }).count).toBe(2);
    expect(m.value('fleetLoad', { group: 'default', owner: w1.id })).toBe(4);
    expect(m.value('fleetFairLoad', { group: 'default', owner: w1.id })).toBe(4);
    // A stopped manager carries nothing (Prometheus drops its series; OpenTelemetry records 0).
    await w1.manager.stop();
    expect((await read()).value('fleetLoad', { group: 'default', owner: w1.id })).toBe(0);
  } finally {
    stop();
    await outsider.close();
    await fleet.stopAll();
  }
}
