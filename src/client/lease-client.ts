import { EventEmitter } from 'node:events';
import { ErrorCode, LeaseError } from '../core/errors.js';
import type { Lease, LeaseRecord } from '../core/lease.js';
import { checkGroup, checkResource, checkResources } from '../core/options.js';
import { permitMatcher, permitResources } from '../core/permits.js';
import { commonPrefix, rotated } from '../core/store-defaults.js';
import { safeEmit } from '../core/safe-emit.js';
import { ignoredByEnvironment, reportStoreSetup } from '../core/setup-report.js';
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
import { FairLine } from './fair-line.js';
import { HeldGroup } from './held-group.js';
import type { HeldLease, LeaseKeeper } from './held-lease.js';
import { Heartbeat } from './heartbeat.js';
import { LeaseBook } from './lease-book.js';
import { LeaseOps } from './lease-ops.js';
import { ReleaseWake, type Wake } from './release-wake.js';
import { waitForGrant } from './wait-loop.js';
import { joinWakeLine, lineAsleep } from './wake-line.js';

/** One resource's answer to `tryAcquireMany`. */
export interface HeldOutcome {
  /** The resource this answer is for (answers come in the order of the names asked). */
  readonly resource: string;
  /** The lease, now kept alive by this client; `null` when someone else holds it. */
  readonly lease: HeldLease | null;
  /** The live record that stood in the way, when the store reports it. */
  readonly holder?: LeaseRecord;
}

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
    const outcome = await this.tryOnce(resource, permits);
    return typeof outcome === 'string' ? null : outcome;
  }

  /** One acquisition attempt: the lease, or why there is none. */
  private async tryOnce(
    resource: string,
    permits: number,
  ): Promise<HeldLease | 'held-by-other' | 'too-late'> {
    this.assertOpen();
    const candidates = this.candidates(checkResource(resource), permits);
    const { store, owner, ttlMs, clock } = this.options;
    const tSent = clock.monotonic();
    const operation = candidates.length === 1 ? 'tryAcquire' : 'acquireFirst';
    let lease: Lease | null;
    try {
      lease =
        candidates.length === 1
          ? await store.tryAcquire(candidates[0]!, owner, ttlMs)
          : await store.acquireFirst(candidates, owner, ttlMs);
    } catch (error) {
      this.report.attempt(resource, 'error', tSent, { error });
      this.report.storeError(operation, error, 1);
      throw error;
    }
    if (!lease) {
      this.report.attempt(resource, 'held-by-other', tSent);
      return 'held-by-other';
    }
    const held = this.book.grant(lease, tSent);
    if (!held.isValid() || this.closing || this.book.has(held.key)) {
      this.report.attempt(resource, 'too-late', tSent, { token: held.token });
      // The answer came after the deadline measured from when the request left (or the client
      // is closing): never hand it out.
      await this.ops.releaseQuietly(held);
      this.assertOpen();
      return 'too-late';
    }
    this.report.attempt(resource, 'acquired', tSent, { token: held.token });
    this.book.adopt([held]);
    return held;
  }

  /**
   * The records one attempt may take: the resource itself, or the permits of the name this client
   * does not hold yet, starting at a random one so that callers arriving together spread out.
   */
  private candidates(resource: string, permits: number): string[] {
    if (permits === 1) {
      this.book.assertNotHeld(resource);
      return [resource];
    }
    const free = permitResources(resource, permits).filter((key) => !this.book.has(key));
    if (free.length === 0)
      throw new LeaseError(
        ErrorCode.INVALID_ARGUMENT,
        `this client already holds all ${permits} permits of ${JSON.stringify(resource)}`,
        { resource },
      );
    return rotated(free);
  }

  /**
   * `tryAcquire` for many resources in one store call (`acquireMany`): one outcome per resource in
   * input order. Resources this client already holds are refused with `INVALID_ARGUMENT`.
   */
  async tryAcquireMany(resources: readonly string[]): Promise<HeldOutcome[]> {
    this.assertOpen();
    for (const resource of checkResources(resources)) this.book.assertNotHeld(resource);
    const { store, owner, ttlMs, clock } = this.options;
    const tSent = clock.monotonic();
    let outcomes;
    try {
      outcomes = await store.acquireMany(resources, owner, ttlMs);
    } catch (error) {
      for (const resource of resources) this.report.attempt(resource, 'error', tSent, { error });
      this.report.storeError('acquireMany', error, resources.length);
      throw error;
    }
    const late: HeldLease[] = [];
    const result = outcomes.map((outcome): HeldOutcome => {
      if (!outcome.lease) {
        this.report.attempt(outcome.resource, 'held-by-other', tSent);
        return outcome as HeldOutcome;
      }
      const held = this.book.grant(outcome.lease, tSent);
      if (!held.isValid() || this.closing || this.book.has(held.key)) {
        this.report.attempt(outcome.resource, 'too-late', tSent, { token: held.token });
        late.push(held);
        return { resource: outcome.resource, lease: null };
      }
      this.report.attempt(outcome.resource, 'acquired', tSent, { token: held.token });
      return { resource: outcome.resource, lease: held };
    });
    if (late.length > 0) await this.ops.releaseManyQuietly(late);
    this.book.adopt(result.flatMap(({ lease }) => (lease ? [lease] : [])));
    return result;
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
    if (fair) return this.acquireFair(resource, permits, waitMs, signal);
    // Opened only once an attempt was refused: a lease granted at once costs no subscription.
    let wake: Wake | undefined;
    try {
      return await waitForGrant(
        this.options,
        `lease on ${JSON.stringify(resource)}${permits > 1 ? ` (all ${permits} permits)` : ''}`,
        resource,
        waitMs,
        signal,
        () => this.tryOnce(resource, permits),
        (held) => this.ops.releaseQuietly(held),
        (since) =>
          (wake ??= joinWakeLine(
            this.options.store,
            this.options.clock,
            `${permits}\u0000${resource}`,
            resource,
            permitMatcher(resource, permits),
            since,
          )),
        () => lineAsleep(this.options.store, `${permits}\u0000${resource}`),
      );
    } finally {
      wake?.close();
    }
  }

  /**
   * Acquires every resource of `resources` or none, if all are free now: the group, or `null` when
   * any member is held by someone else. One atomic store call where the store has multi-record
   * transactions (`capabilities.atomicGroupMax`); elsewhere the members are taken in resource order
   * and given back at the first refusal. A caller never receives part of a set.
   */
  async tryAcquireAll(resources: readonly string[]): Promise<HeldGroup | null> {
    const outcome = await this.tryGroupOnce(resources);
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
    const names = new Set(checkGroup(resources));
    let wake: Wake | undefined;
    try {
      return await waitForGrant(
        this.options,
        `group of ${resources.length} leases (${resources
          .slice(0, 3)
          .map((r) => JSON.stringify(r))
          .join(', ')}${resources.length > 3 ? ', …' : ''})`,
        undefined,
        waitMs,
        signal,
        () => this.tryGroupOnce(resources),
        (group) => this.ops.releaseManyQuietly(group.leases),
        () =>
          (wake ??= ReleaseWake.for(this.options.store, commonPrefix(resources), (r) =>
            names.has(r),
          )),
      );
    } finally {
      wake?.close();
    }
  }

  private async tryGroupOnce(
    resources: readonly string[],
  ): Promise<HeldGroup | 'held-by-other' | 'too-late'> {
    this.assertOpen();
    for (const resource of checkGroup(resources)) this.book.assertNotHeld(resource);
    const names = [...resources];
    const { store, owner, ttlMs, clock } = this.options;
    const tSent = clock.monotonic();
    let leases: Lease[] | null;
    try {
      leases = await store.acquireAll(names, owner, ttlMs);
    } catch (error) {
      for (const resource of names) this.report.attempt(resource, 'error', tSent, { error });
      this.report.storeError('acquireAll', error, names.length);
      throw error;
    }
    if (!leases) {
      for (const resource of names) this.report.attempt(resource, 'held-by-other', tSent);
      return 'held-by-other';
    }
    const members = leases.map((lease) => this.book.grant(lease, tSent));
    if (this.closing || members.some((m) => !m.isValid() || this.book.has(m.key))) {
      for (const m of members)
        this.report.attempt(m.resource, 'too-late', tSent, { token: m.token });
      await this.ops.releaseManyQuietly(members);
      this.assertOpen();
      return 'too-late';
    }
    for (const held of members)
      this.report.attempt(held.resource, 'acquired', tSent, { token: held.token });
    const group = new HeldGroup(members, {
      releaseMany: (leases) => this.releaseMany(leases),
      releaseQuietly: (leases) => this.ops.releaseManyQuietly(leases),
    });
    this.book.adopt(members);
    return group;
  }

  /** Fair waiting: in line behind earlier fair waiters on the name (see `FairLine`). */
  private async acquireFair(
    resource: string,
    permits: number,
    waitMs: number,
    signal: AbortSignal | undefined,
  ): Promise<HeldLease> {
    this.assertOpen();
    const line = new FairLine({
      store: this.options.store,
      clock: this.options.clock,
      owner: this.owner,
      ttlMs: this.ttlMs,
      heartbeatMs: this.heartbeatMs,
      maxClockSkewMs: this.maxClockSkewMs,
      name: resource,
      permits,
    });
    return line.wait(
      waitMs,
      signal,
      () => this.tryOnce(resource, permits),
      (held) => this.ops.releaseQuietly(held),
    );
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
