import { ErrorCode, LeaseError } from '../core/errors.js';
import { checkData, type LeaseData } from '../core/lease-data.js';
import { noAnswer, withDeadline } from '../core/deadline.js';
import type { StoreOperation } from '../core/channels.js';
import { checkDataOptions, type ResolvedClientOptions } from './client-options.js';
import type { ClientReporter } from './client-reporter.js';
import type { DataOptions, HeldLease } from './held-lease.js';
import type { Heartbeat } from './heartbeat.js';
import { wakeAhead } from './wake-line.js';

/**
 * What `LeaseOps` needs of the client it works for; its `ttlMs` bounds every store call made here
 * (past it, the lease has lapsed on its own).
 */
export interface LeaseOpsOptions extends Pick<ResolvedClientOptions, 'store' | 'clock' | 'ttlMs'> {
  /** Renews one lease on request (`renew()`), between beats. */
  readonly heartbeat: Heartbeat;
  /** Tells the diagnostics channels and the logger of store errors. */
  readonly report: ClientReporter;
  /** A release or cleanup call failed: reported and told to the client's listeners. */
  readonly releaseFailed: (held: HeldLease, error: unknown) => void;
}

/**
 * The operations on leases a client holds: what a `HeldLease` calls back into (`renew`,
 * `writeData`, `release`) and what a `HeldGroup` does (`releaseMany`, and the quiet releases of a
 * broken group), each one bounded store call.
 */
export class LeaseOps {
  constructor(private readonly options: LeaseOpsOptions) {}

  async renewLease(held: HeldLease, options?: DataOptions): Promise<void> {
    const data = checkDataOptions(options, 'renew options');
    if (held.isTerminal) throw held.signal.reason;
    const stillHeld = await this.options.heartbeat.renewOne(held, data);
    if (!stillHeld) throw held.signal.reason;
    if (data !== undefined) held.setData(data);
  }

  /**
   * `writeData`: refused before sending unless the lease is valid now (rule 2, checked on the
   * clock, so a frozen loop that woke past its deadline sends nothing); then one bounded
   * compare-and-set on owner and token.
   */
  async writeLeaseData(held: HeldLease, value: unknown): Promise<void> {
    const data = checkData(value);
    this.assertStillValid(held, 'writeData');
    const written = await this.bounded(
      this.options.store.writeData(held.lease, data),
      `writeData of ${JSON.stringify(held.key)}`,
      'writeData',
      1,
    );
    if (!written) throw this.notOurs(held, 'writeData');
    held.setData(data);
  }

  /** Throws `LEASE_LOST` unless `held` is valid now: its deadline passed, or it is over. */
  private assertStillValid(held: HeldLease, what: string): void {
    if (held.isValid()) return;
    if (held.isTerminal) throw held.signal.reason as LeaseError;
    // Past the deadline, the watchdog not run yet (a frozen loop): the lease is over now.
    throw (
      held.markLost(`its deadline passed before ${what}; nothing was written`) ??
      (held.signal.reason as LeaseError)
    );
  }

  /** The store answered that the record is no longer this grant's: the lease is lost. */
  private notOurs(held: HeldLease, what: string): LeaseError {
    return (
      held.markLost(
        `the store refused ${what}: the record is no longer this grant's (taken over or released); nothing was written`,
        'taken',
      ) ?? (held.signal.reason as LeaseError)
    );
  }

  async releaseLease(held: HeldLease, options?: DataOptions): Promise<void> {
    const data = checkDataOptions(options, 'release options');
    if (data !== undefined) return this.releaseWithData(held, data);
    if (!held.markReleased()) return;
    const undo = wakeAhead(this.options.store, held.lease.resource);
    let released = false;
    try {
      released = await this.bounded(
        this.options.store.release(held.lease),
        `release of ${JSON.stringify(held.resource)}`,
        'release',
        1,
      );
    } finally {
      if (!released) undo?.();
    }
  }

  /**
   * `release({ data })`: the value must go under a valid lease, so validity is checked first;
   * then belief ends and one release carrying the data is sent. `false` from the store means the
   * record was no longer ours: the value did not land, and the caller is told.
   */
  private async releaseWithData(held: HeldLease, data: LeaseData | null): Promise<void> {
    this.assertStillValid(held, 'release with data');
    held.markReleased();
    const released = await this.bounded(
      this.options.store.release(held.lease, data),
      `release of ${JSON.stringify(held.resource)}`,
      'release',
      1,
    );
    if (!released)
      throw new LeaseError(
        ErrorCode.LEASE_LOST,
        `lease on ${JSON.stringify(held.key)} (token ${held.token}): the store refused the release with data: the record was no longer this grant's; the value was not written`,
        { resource: held.resource, retryable: false },
      );
    held.setData(data);
  }

  /**
   * `LeaseClient.releaseMany`: one `releaseMany` for several held leases (one bounded attempt),
   * skipping those already lost or released.
   */
  async releaseMany(leases: readonly HeldLease[]): Promise<void> {
    const live = leases.filter((held) => held.markReleased());
    if (live.length === 0) return;
    await this.bounded(
      this.options.store.releaseMany(live.map((h) => h.lease)),
      `releaseMany of ${live.length} leases`,
      'releaseMany',
      live.length,
    );
  }

  /** One bounded release attempt for a lease we no longer count on; failure only means it lapses at its TTL. */
  async releaseQuietly(held: HeldLease): Promise<void> {
    held.markReleased();
    try {
      await this.bounded(
        this.options.store.release(held.lease),
        `release of ${JSON.stringify(held.resource)}`,
        'release',
        1,
      );
    } catch (error) {
      this.options.releaseFailed(held, error);
    }
  }

  /** One bounded `releaseMany` for leases we no longer count on (answered too late, or closing). */
  async releaseManyQuietly(leases: readonly HeldLease[]): Promise<void> {
    leases = leases.filter((held) => held.markReleased());
    if (leases.length === 0) return;
    try {
      await this.bounded(
        this.options.store.releaseMany(leases.map((h) => h.lease)),
        `releaseMany of ${leases.length} leases`,
        'releaseMany',
        leases.length,
      );
    } catch (error) {
      for (const held of leases) this.options.releaseFailed(held, error);
    }
  }

  /** One store call bounded by the TTL; a failure (or no answer in time) is reported once. */
  bounded<T>(call: Promise<T>, what: string, operation: StoreOperation, count: number): Promise<T> {
    const { ttlMs, clock } = this.options;
    return withDeadline(call, ttlMs, () => noAnswer(what, ttlMs), { clock }).catch(
      (error: unknown) => {
        this.options.report.storeError(operation, error, count);
        throw error;
      },
    );
  }
}
