import { EventEmitter } from 'node:events';
import { ErrorCode, LeaseError } from '../core/errors.js';
import { checkResource } from '../core/options.js';
import { permitResources } from '../core/permits.js';
import { safeEmit } from '../core/safe-emit.js';
import { ignoredByEnvironment, reportStoreSetup } from '../core/setup-report.js';
import { AcquireWaits } from './acquire-waits.js';
import { Attempts, type HeldOutcome } from './attempts.js';
import { ClientReporter } from './client-reporter.js';
import {
  checkAcquireAllOptions,
  checkAcquireOptions,
  checkTryAcquireOptions,
  resolveClientOptions,
  type AcquireAllOptions,
  type AcquireOptions,
  type TryAcquireOptions,
  type LeaseClientOptions,
  type ResolvedClientOptions,
} from './client-options.js';
import type { HeldGroup } from './held-group.js';
import type { HeldLease, LeaseKeeper } from './held-lease.js';
import { Heartbeat } from './heartbeat.js';
import { LeaseBook } from './lease-book.js';
import { LeaseOps } from './lease-ops.js';

/** The events a `LeaseClient` emits, with their listener arguments; listener errors are isolated. */
export interface LeaseClientEvents {
  /** A lease was granted to this client (`tryAcquire`, `acquire`, `tryAcquireMany`, `withLease`). */
  acquired: [lease: HeldLease];
  /** A held lease turned at-risk (renewals failing, or under a third of its validity left), and why. */
  'at-risk': [lease: HeldLease, reason: string];
  /** A held lease was lost; its `signal` has aborted with `error` (`LEASE_LOST`). */
  lost: [lease: HeldLease, error: LeaseError];
  /** A lease was given up: `release`, `releaseMany`, `close`, or a grant that came too late to use. */
  released: [lease: HeldLease];
  /** A release or cleanup call failed; the lease will lapse at its TTL instead. */
  'release-failed': [lease: HeldLease, error: unknown];
}

/**
 * Acquires leases for one owner and keeps them alive: one heartbeat timer renews everything it holds
 * with one `renewMany`, and each lease's `signal` aborts at its deadline unless a renewal landed.
 */
export class LeaseClient extends EventEmitter<LeaseClientEvents> {
  /** The owner written into every lease this client takes. */
  readonly owner: string;
  /** The TTL, in ms, of every acquire and renew. */
  readonly ttlMs: number;
  /** How often, in ms, held leases are renewed. */
  readonly heartbeatMs: number;
  /** The clock disagreement, in ms, subtracted from each lease's local deadline. */
  readonly maxClockSkewMs: number;
  private readonly options: ResolvedClientOptions;
  private readonly heartbeat: Heartbeat;
  private readonly ops: LeaseOps;
  private readonly book: LeaseBook;
  private readonly attempts: Attempts;
  private readonly waits: AcquireWaits;
  private readonly report: ClientReporter;
  private closing: Promise<void> | undefined;

  /** Checks `options` (throws `INVALID_ARGUMENT` naming the field) and applies the defaults. */
  constructor(options: LeaseClientOptions) {
    super();
    this.options = resolveClientOptions(options);
    ({
      owner: this.owner,
      ttlMs: this.ttlMs,
      heartbeatMs: this.heartbeatMs,
      maxClockSkewMs: this.maxClockSkewMs,
    } = this.options);
    this.report = new ClientReporter(this.owner, this.options.clock, this.options.logger);
    this.reportStoreSetup();
    this.heartbeat = new Heartbeat({
      ...this.options,
      onLateRenewal: (held) => void this.ops.releaseQuietly(held),
      report: this.report,
    });
    this.ops = new LeaseOps({
      ...this.options,
      heartbeat: this.heartbeat,
      report: this.report,
      releaseFailed: (held, error) => this.releaseFailed(held, error),
    });
    const keeper: LeaseKeeper = {
      clock: this.options.clock,
      renewLease: (held, options) => this.ops.renewLease(held, options),
      releaseLease: (held, options) => this.ops.releaseLease(held, options),
      writeLeaseData: (held, data) => this.ops.writeLeaseData(held, data),
      stateChanged: (held, state, detail) => {
        if (state !== 'at-risk') this.book.forget(held);
        if (state === 'at-risk') {
          this.report.atRisk(held, detail as string, held.remainingMs());
          this.emit('at-risk', held, detail as string);
        } else if (state === 'lost') {
          this.report.lost(held, held.lossCause ?? 'expired', detail);
          this.emit('lost', held, detail as LeaseError);
        } else {
          this.report.released(held, held.grantedAt);
          this.emit('released', held);
        }
      },
    };
    this.book = new LeaseBook({
      heartbeat: this.heartbeat,
      keeper,
      maxClockSkewMs: this.maxClockSkewMs,
      acquired: (held) => {
        this.report.acquired(held);
        this.emit('acquired', held);
      },
    });
    this.attempts = new Attempts({
      ...this.options,
      report: this.report,
      book: this.book,
      ops: this.ops,
      closing: () => this.closing !== undefined,
      assertOpen: () => this.assertOpen(),
    });
    this.waits = new AcquireWaits({
      ...this.options,
      attempts: this.attempts,
      ops: this.ops,
      assertOpen: () => this.assertOpen(),
    });
  }

  /**
   * What `leasehold doctor` would say of the store's setup, told once per store to the logger and
   * the `leasehold:store:finding` channel, in the background, when either listens.
   */
  private reportStoreSetup(): void {
    const { store, logger, ignoreFindings } = this.options;
    const env = ignoredByEnvironment();
    if (env.problem) logger?.warn({ owner: this.owner }, env.problem);
    reportStoreSetup(store, logger, new Set([...ignoreFindings, ...env.ids]));
  }

  /** Listener errors are isolated (see `safeEmit`), so they cannot stop loss detection. */
  override emit<K extends keyof LeaseClientEvents>(
    event: K,
    ...args: LeaseClientEvents[K]
  ): boolean {
    return safeEmit(this, event, args);
  }

  /**
   * Acquires `resource` if it is free now; `null` when another live holder has it (or when the
   * store answered so late that the lease's validity deadline had already passed: it is released).
   * With `permits: N`, takes any one of the N permits of the name, in one store call
   * (`acquireFirst`); `null` when all N are held.
   */
  async tryAcquire(resource: string, options?: TryAcquireOptions): Promise<HeldLease | null> {
    const permits = checkTryAcquireOptions(options);
    const outcome = await this.attempts.tryOnce(resource, permits);
    return typeof outcome === 'string' ? null : outcome;
  }

  /**
   * `tryAcquire` for many resources in one store call (`acquireMany`): one outcome per resource in
   * input order. Resources this client already holds are refused with `INVALID_ARGUMENT`.
   */
  tryAcquireMany(resources: readonly string[]): Promise<HeldOutcome[]> {
    return this.attempts.tryAcquireMany(resources);
  }

  /**
   * Acquires `resource`, waiting with jittered backoff while another holder has it; on a store
   * that announces releases (`capabilities.watch`), a release of it ends the backoff at once.
   * With `permits: N`, waits for any one of the N permits of the name; with `fair: true`, waits in
   * line (see `AcquireOptions.fair`). Throws `LEASE_UNAVAILABLE` when `waitMs` runs out; rejects
   * with `signal.reason` when aborted. When the last attempt was granted but answered too late to
   * use, the message says so instead.
   */
  async acquire(resource: string, options?: AcquireOptions): Promise<HeldLease> {
    const { waitMs, signal, permits, fair } = checkAcquireOptions(options);
    checkResource(resource);
    if (permits > 1) permitResources(resource, permits); // a name too long for its permits fails now
    if (fair) return this.waits.inLine(resource, permits, waitMs, signal);
    return this.waits.forLease(resource, permits, waitMs, signal);
  }

  /**
   * Acquires every resource of `resources` or none, if all are free now: the group, or `null` when
   * any member is held by someone else. One atomic store call where the store has multi-record
   * transactions (`capabilities.atomicGroupMax`); elsewhere the members are taken in resource order
   * and given back at the first refusal. A caller never receives part of a set.
   */
  async tryAcquireAll(resources: readonly string[]): Promise<HeldGroup | null> {
    const outcome = await this.attempts.tryGroupOnce(resources);
    return typeof outcome === 'string' ? null : outcome;
  }

  /**
   * Acquires every resource of `resources` or none, waiting (jittered backoff, cut short by a
   * release of any member on stores that announce releases) until all are free at once. Nothing
   * is held while waiting, so groups over crossing sets never deadlock. Throws `LEASE_UNAVAILABLE`
   * when `waitMs` runs out; rejects with `signal.reason` when aborted.
   */
  async acquireAll(resources: readonly string[], options?: AcquireAllOptions): Promise<HeldGroup> {
    const { waitMs, signal } = checkAcquireAllOptions(options);
    return this.waits.forGroup(resources, waitMs, signal);
  }

  /**
   * Acquires `resource`, runs `fn` while heartbeats keep it, and releases it afterwards. `signal`
   * aborts the moment the lease is lost; if it was lost, the call rejects with `LEASE_LOST` even
   * when `fn` finished, since its work was no longer exclusive.
   */
  async withLease<T>(
    resource: string,
    fn: (signal: AbortSignal, lease: HeldLease) => Promise<T> | T,
    options?: AcquireOptions,
  ): Promise<T> {
    const held = await this.acquire(resource, options);
    let result: T;
    try {
      result = await fn(held.signal, held);
    } catch (error) {
      await held.release().catch((releaseError: unknown) => this.releaseFailed(held, releaseError));
      throw error;
    }
    // `isValid()` reads the clock: a frozen event loop may have kept the watchdog from running.
    if (held.state === 'held' || held.state === 'at-risk') {
      if (!held.isValid()) held.markLost('its validity deadline passed while the work ran');
    }
    if (held.state === 'lost') throw held.signal.reason;
    // The work is done; a failed release only means the lease lapses at its TTL, so it is reported, not thrown.
    await held.release().catch((releaseError: unknown) => this.releaseFailed(held, releaseError));
    return result;
  }

  /**
   * Releases several held leases with one `releaseMany` (one bounded attempt, like `release()`).
   * Leases already lost or released are skipped.
   */
  releaseMany(leases: readonly HeldLease[]): Promise<void> {
    return this.ops.releaseMany(leases);
  }

  /** Leases this client holds now. */
  held(): HeldLease[] {
    return this.heartbeat.held();
  }

  /** The lease this client holds on `resource`, if any. */
  lease(resource: string): HeldLease | undefined {
    return this.book.get(resource);
  }

  /** How many leases this client holds now. */
  get size(): number {
    return this.book.size;
  }

  /**
   * Lets the process exit while this client holds auto-renewed leases (as `server.unref()` does):
   * by default, like a listening server, they keep it alive until released or the client closed,
   * so a program never ends while it believes it holds a lease. Returns the client.
   */
  unref(): this {
    this.heartbeat.setRef(false);
    return this;
  }

  /** Undoes `unref()`: held auto-renewed leases keep the process alive again. */
  ref(): this {
    this.heartbeat.setRef(true);
    return this;
  }

  /** Releases everything held with one `releaseMany` and stops the heartbeat. The store stays open. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /** `await using client = …` closes the client at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private async shutdown(): Promise<void> {
    const held = this.heartbeat.held().filter((h) => h.markReleased());
    this.heartbeat.stop();
    if (held.length === 0) return;
    // One bounded attempt: past the TTL every lease has lapsed on its own, so waiting longer buys nothing.
    // A `false` result means that lease had already lapsed: nothing left to give up.
    await this.ops.bounded(
      this.options.store.releaseMany(held.map((h) => h.lease)),
      'releaseMany on close',
      'releaseMany',
      held.length,
    );
  }

  private releaseFailed(held: HeldLease, error: unknown): void {
    this.report.releaseFailed(held, error);
    this.emit('release-failed', held, error);
  }

  private assertOpen(): void {
    if (this.closing)
      throw new LeaseError(ErrorCode.CLIENT_CLOSED, 'the LeaseClient is closed', {
        retryable: false,
      });
  }
}
