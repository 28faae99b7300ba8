import type { HeldLease } from '../client/held-lease.js';
import type { LeaseClient } from '../client/lease-client.js';
import type { LeaseError } from '../core/errors.js';
import type { Clock } from '../core/time.js';
import type { FleetReporter } from './fleet-reporter.js';
import type { LeaseManagerEvents } from './manager-options.js';
import { settleWithin } from './util.js';

/** Why a lease is handed over: to a less loaded worker, or because it is no longer wanted. */
export type HandoffReason = 'balance' | 'unwanted';

/** What the runner needs of its manager. */
export interface WorkHost {
  readonly client: Pick<LeaseClient, 'releaseMany' | 'ttlMs'>;
  readonly clock: Clock;
  readonly report: FleetReporter;
  /** The user's work for a lease just taken (`onAcquired`), if any. */
  readonly work: ((lease: HeldLease) => unknown) | undefined;
  /** Told of a lease lost (`onLost`), if anyone. */
  readonly onLost: ((lease: HeldLease, error: LeaseError) => void) | undefined;
  /** A lease was granted: told before anything else (takeovers are measured from it). */
  granted(lease: HeldLease): void;
  /** Whether the resource is wanted, as of the last reconcile pass. */
  wants(resource: string): boolean;
  /** Whether the manager is stopping: a lease granted now is given back. */
  stopping(): boolean;
  emit<K extends keyof LeaseManagerEvents>(event: K, ...args: LeaseManagerEvents[K]): void;
  /** A handover's release failed (reported as `reconcile-failed`). */
  failed(error: unknown): void;
}

/**
 * The work of each lease a manager holds, and its end: `begin` runs `onAcquired` for a lease just
 * taken (work that fails gives its lease back so a worker can try again), `lost` tells of a lease
 * lost, `handOff` revokes leases, lets their work settle (up to half a TTL), then releases them
 * for another worker in one call. Leases being handed over no longer count toward the share
 * (`isLeaving`, `leavingCount`).
 */
export class WorkRunner {
  private readonly running = new Map<HeldLease, Promise<void>>();
  private readonly leaving = new Set<HeldLease>();

  constructor(private readonly host: WorkHost) {}

  /** Runs the work of a lease just taken, unless it is not wanted (any more): that one is given back. */
  begin(lease: HeldLease): void {
    const { host } = this;
    host.granted(lease);
    if (host.stopping() || !host.wants(lease.resource)) {
      void lease.release().catch(() => undefined);
      return;
    }
    host.emit('acquired', lease);
    const work = host.work;
    if (!work) return;
    const running = Promise.resolve()
      .then(() => work(lease))
      .then(
        () => undefined,
        async (error: unknown) => {
          host.report.workFailed(lease, error);
          host.emit('work-failed', lease, error);
          if (!lease.isTerminal) await lease.release().catch(() => undefined);
        },
      )
      .finally(() => this.running.delete(lease));
    this.running.set(lease, running);
  }

  /** A lease was lost (its signal aborted with `error`): `lost` is emitted, then `onLost` told. */
  lost(lease: HeldLease, error: LeaseError): void {
    this.host.emit('lost', lease, error);
    try {
      this.host.onLost?.(lease, error);
    } catch (failure) {
      // A throwing listener is the caller's bug: it surfaces as an uncaught exception, not here.
      process.nextTick(() => {
        throw failure;
      });
    }
  }

  /** Waits up to `ms` for the work of every lease to settle. */
  settle(ms: number): Promise<void> {
    return settleWithin([...this.running.values()], ms, this.host.clock);
  }

  /** Whether `lease` is being handed over. */
  isLeaving(lease: HeldLease): boolean {
    return this.leaving.has(lease);
  }

  /**
   * Leases being handed over that the client still counts as held. A lease leaves the client's
   * count when its `releaseMany` is sent, before the store answers and the handoff ends: counting
   * it here until then would make room for as many new leases, taken while the old ones are still
   * on their way out.
   */
  leavingCount(): number {
    let n = 0;
    for (const lease of this.leaving) if (!lease.isTerminal) n++;
    return n;
  }

  /** Aborts the leases' work, lets it settle, then releases them for another worker in one call. */
  async handOff(leases: HeldLease[], reason: HandoffReason): Promise<void> {
    if (leases.length === 0) return;
    for (const lease of leases) this.leaving.add(lease);
    try {
      await this.handOver(leases, reason);
    } finally {
      for (const lease of leases) this.leaving.delete(lease);
    }
  }

  private async handOver(leases: HeldLease[], reason: HandoffReason): Promise<void> {
    const { host } = this;
    const why = reason === 'balance' ? 'handed to a less loaded worker' : 'no longer wanted';
    const startedAt = host.clock.monotonic();
    for (const lease of leases) lease.revoke(why);
    await settleWithin(
      leases.map((lease) => this.running.get(lease)),
      host.client.ttlMs / 2,
      host.clock,
    );
    const live = leases.filter((lease) => !lease.isTerminal);
    for (const lease of live) host.emit('handoff', lease, reason);
    try {
      await host.client.releaseMany(live);
    } catch (error) {
      host.failed(error);
      return;
    }
    for (const lease of live)
      if (lease.state === 'released') host.report.handoff(lease, reason, startedAt);
  }
}
