import { EventEmitter } from 'node:events';
import { ErrorCode, LeaseError } from '../core/errors.js';
import type { Lease } from '../core/lease.js';
import type { LeaseData } from '../core/lease-data.js';
import { parsePermit } from '../core/permits.js';
import { safeEmit } from '../core/safe-emit.js';
import type { Clock } from '../core/time.js';
import type { LeaseLossCause } from '../core/channels.js';

/**
 * Where a `HeldLease` is: `held`, `at-risk` (renewals failing or little validity left; back to
 * `held` after a renewal), or, for good, `lost` or `released`.
 */
export type LeaseState = 'held' | 'at-risk' | 'lost' | 'released';

/** The events a `HeldLease` emits, with their listener arguments; listener errors are isolated. */
export interface HeldLeaseEvents {
  /** A renewal landed; the lease is held until the new `validUntil`. */
  renewed: [lease: HeldLease];
  /** Renewals are failing, or less than a third of the TTL is left. */
  'at-risk': [reason: string];
  /** The lease is gone; `signal` has aborted with this error. */
  lost: [error: LeaseError];
  /** The holder gave the lease up. */
  released: [];
}

/** The options of `renew` and `release`: lease data written in the same store call. */
export interface DataOptions {
  /**
   * Lease data to write with the renewal or release, under this lease's token, in the same
   * compare-and-set (`null` clears it). Omitted: the record's data is left as it is.
   */
  data?: LeaseData | null;
}

/** What a `HeldLease` asks of the client that made it (not exported from the package). */
export interface LeaseKeeper {
  readonly clock: Clock;
  renewLease(held: HeldLease, options?: DataOptions): Promise<void>;
  releaseLease(held: HeldLease, options?: DataOptions): Promise<void>;
  writeLeaseData(held: HeldLease, data: LeaseData | null): Promise<void>;
  /** Told of every state change, before the lease's own listeners. */
  stateChanged(
    held: HeldLease,
    state: 'at-risk' | 'lost' | 'released',
    detail?: string | LeaseError,
  ): void;
}

/**
 * One lease this process holds: a stable handle whose `signal` aborts the moment the holder can no
 * longer be sure of it. Its state only moves forward: held ⇄ at-risk → lost | released.
 */
export class HeldLease extends EventEmitter<HeldLeaseEvents> {
  /** The resource this lease is on: for a permit of a counting lease, the name the permits share. */
  readonly resource: string;
  /**
   * Which permit of `resource` this lease is (0 … permits − 1); `0` for an exclusive lease, which
   * is permit 0 of a one-permit name. Fencing tokens rise per permit.
   */
  readonly permit: number;
  /** The store record the lease lives in: `resource` itself, or the record of permit `permit`. */
  readonly key: string;
  /** The owner the lease was granted to. */
  readonly owner: string;
  /** The fencing token of this grant: pass it to downstream writes so stale holders are refused. */
  readonly token: number;
  private current: Lease;
  private dataValue: LeaseData | null;
  private deadline: number;
  private status: LeaseState = 'held';
  /** Made on first use of `signal`: most of the cost of ending 10,000 leases is aborting signals nobody read. */
  private controller: AbortController | undefined;
  private endReason: LeaseError | undefined;
  /** @internal Set while renewals are failing; cleared by the next success. */
  failing = false;
  /** @internal Monotonic time the last renewal was sent. */
  lastSentAt: number;
  /** @internal Monotonic time the request that granted the lease was sent. */
  readonly grantedAt: number;
  /** @internal Why the lease was lost, once it is. */
  lossCause: LeaseLossCause | undefined;
  /** A third of the validity window (ttl − drift − skew): at-risk when less than this is left. */
  private readonly riskMs: number;

  /**
   * @internal Only a `LeaseClient` and its parts make these: a lease granted from a request sent at `tSent`,
   * held until `validUntil` (both on the keeper's monotonic clock).
   */
  static grant(lease: Lease, validUntil: number, tSent: number, keeper: LeaseKeeper): HeldLease {
    return new HeldLease(lease, validUntil, tSent, keeper);
  }

  private constructor(
    lease: Lease,
    validUntil: number,
    tSent: number,
    private readonly keeper: LeaseKeeper,
  ) {
    super();
    const { name, permit } = parsePermit(lease.resource);
    this.resource = name;
    this.permit = permit;
    this.key = lease.resource;
    this.owner = lease.owner;
    this.token = lease.token;
    this.current = lease;
    this.dataValue = lease.data ?? null;
    this.deadline = validUntil;
    this.lastSentAt = tSent;
    this.grantedAt = tSent;
    this.riskMs = (validUntil - tSent) / 3;
  }

  /** Listener errors are isolated (see `safeEmit`), so they cannot stop loss detection. */
  override emit<K extends keyof HeldLeaseEvents>(event: K, ...args: HeldLeaseEvents[K]): boolean {
    return safeEmit(this, event, args);
  }

  /** The lease as the store last granted it. */
  get lease(): Lease {
    return this.current;
  }

  /** When the store's record lapses unless renewed, in ms since the epoch on the store's time. */
  get expiresAt(): number {
    return this.current.expiresAt;
  }

  /** The TTL, in ms, of the last grant or renewal. */
  get ttlMs(): number {
    return this.current.ttlMs;
  }

  /** The local deadline of design rule 2, on the monotonic clock (`performance.now()` by default). */
  get validUntil(): number {
    return this.deadline;
  }

  /** Where the lease is now: `held`, `at-risk`, `lost` or `released`. */
  get state(): LeaseState {
    return this.status;
  }

  /** Aborts with a `LeaseError`: `LEASE_LOST` when lost, `LEASE_RELEASED` when given up. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      const reason = this.endReason ?? (this.isTerminal ? this.releasedReason() : undefined);
      if (reason) this.controller.abort(reason);
    }
    return this.controller.signal;
  }

  /** When the lease turns at-risk if not renewed: a third of its validity window before the deadline. */
  get atRiskAt(): number {
    return this.deadline - this.riskMs;
  }

  /** @internal Lost or released: nothing more will happen to this lease. */
  get isTerminal(): boolean {
    return this.status === 'lost' || this.status === 'released';
  }

  /**
   * Whether the lease may still be relied on right now. Reads the clock itself, so it is right even
   * after the event loop was frozen (GC pause, SIGSTOP) and no timer has run: call it just before an
   * external write, and pass `token` to the downstream resource as well.
   */
  isValid(): boolean {
    return !this.isTerminal && this.keeper.clock.monotonic() < this.deadline;
  }

  /** Milliseconds of validity left on the monotonic clock (0 once lost or released). */
  remainingMs(): number {
    return this.isTerminal ? 0 : Math.max(0, this.deadline - this.keeper.clock.monotonic());
  }

  /**
   * The lease data: what the previous holders left when this lease was granted (`null` if none),
   * then what this holder last wrote (`writeData`, or `renew` / `release` with `data`).
   */
  get data(): LeaseData | null {
    return this.dataValue;
  }

  /**
   * Writes the lease data under this lease's token: one compare-and-set on owner and token that
   * leaves the expiry alone. Checked synchronously first: a value that is neither a string nor
   * bytes, or over `LIMITS.dataMaxBytes`, is refused with `INVALID_ARGUMENT`; a lease no longer
   * valid (lost, released, or past its deadline even on a frozen loop) with `LEASE_LOST`, nothing
   * sent (`LEASE_RELEASED` once this holder released it). Rejects with `LEASE_LOST` (and the
   * lease is lost) when the store says the record is no longer this grant's; the value was then
   * not written.
   */
  writeData(data: LeaseData | null): Promise<void> {
    return this.keeper.writeLeaseData(this, data);
  }

  /**
   * Renews now (for `autoRenew: false`). Rejects with `LEASE_LOST` if the lease is gone. With
   * `data`, writes it in the same store call (checked as `writeData` checks it).
   */
  renew(options?: DataOptions): Promise<void> {
    return this.keeper.renewLease(this, options);
  }

  /**
   * Aborts the work tied to the lease, then gives the lease up with one store call. With `data`,
   * the value goes with the release, for the next holder: checked as `writeData` checks it, and
   * rejected with `LEASE_LOST` when the lease was no longer valid or no longer this grant's (the
   * lease is then over all the same, the value not written).
   */
  release(options?: DataOptions): Promise<void> {
    return this.keeper.releaseLease(this, options);
  }

  /** @internal A value this holder wrote landed. */
  setData(data: LeaseData | null): void {
    this.dataValue = data;
  }

  /** `await using lease = …` releases the lease at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** A plain snapshot for logs: resource, permit, owner, token, expiresAt, ttlMs, validUntil and state. */
  toJSON(): object {
    const { resource, permit, owner, token, expiresAt, ttlMs, validUntil, state } = this;
    return { resource, permit, owner, token, expiresAt, ttlMs, validUntil, state };
  }

  /** @internal a renewal sent at `tSent` landed; returns false when the lease was already over. */
  markRenewed(lease: Lease, validUntil: number): boolean {
    if (this.isTerminal) return false;
    this.current = lease;
    // Renewals of one lease all use its TTL, so whichever landed last at the store, the store's
    // expiry is at least every landed renewal's tSent + ttl: the latest deadline is safe even when
    // replies arrive out of order.
    this.deadline = Math.max(this.deadline, validUntil);
    this.failing = false;
    if (this.status === 'at-risk' && this.keeper.clock.monotonic() < this.atRiskAt)
      this.status = 'held';
    this.emit('renewed', this);
    return true;
  }

  /** @internal */
  markAtRisk(reason: string): void {
    if (this.status !== 'held') return;
    this.status = 'at-risk';
    this.keeper.stateChanged(this, 'at-risk', reason);
    this.emit('at-risk', reason);
  }

  /** @internal `why` is reported to the diagnostics channels; `cause` becomes the error's cause. */
  markLost(
    message: string,
    why: LeaseLossCause = 'expired',
    cause?: unknown,
  ): LeaseError | undefined {
    if (this.isTerminal) return undefined;
    this.status = 'lost';
    this.lossCause = why;
    const error = quietError(
      ErrorCode.LEASE_LOST,
      `lease on ${this.describe()} (token ${this.token}) lost: ${message}`,
      {
        cause,
        resource: this.resource,
        retryable: false,
      },
    );
    this.end(error);
    this.keeper.stateChanged(this, 'lost', error);
    this.emit('lost', error);
    return error;
  }

  /**
   * @internal Aborts the work tied to the lease while keeping the lease held (and renewed) until it
   * is released: a graceful stop or handoff lets the work wind down before anyone else can take over.
   */
  revoke(why: string): void {
    if (this.isTerminal || this.endReason) return;
    this.end(
      quietError(
        ErrorCode.LEASE_RELEASED,
        `lease on ${this.describe()} (token ${this.token}) is being released: ${why}`,
        { resource: this.resource, retryable: false },
      ),
    );
  }

  /** The resource, quoted, and the permit when the lease is one of several. */
  private describe(): string {
    const name = JSON.stringify(this.resource);
    return this.key === this.resource ? name : `${name} permit ${this.permit}`;
  }

  private end(reason: LeaseError): void {
    this.endReason ??= reason;
    this.controller?.abort(reason);
  }

  private releasedReason(): LeaseError {
    return (this.endReason ??= quietError(
      ErrorCode.LEASE_RELEASED,
      `lease on ${this.describe()} (token ${this.token}) released`,
      { resource: this.resource, retryable: false },
    ));
  }

  /** @internal */
  markReleased(): boolean {
    if (this.isTerminal) return false;
    this.status = 'released';
    // A revoked lease already aborted its signal with the reason it is being released. Nobody
    // reads the signal of most leases: its reason is then made only if it is read later.
    if (!this.endReason && this.controller) this.end(this.releasedReason());
    this.keeper.stateChanged(this, 'released');
    this.emit('released');
    return true;
  }
}

/**
 * A `LeaseError` without a stack trace: the reason a signal aborts with is raised by a timer or a
 * shutdown, not by the code that will read it, and capturing a stack for each of 10,000 leases on
 * close would dominate shutdown time.
 */
function quietError(...args: ConstructorParameters<typeof LeaseError>): LeaseError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new LeaseError(...args);
  } finally {
    Error.stackTraceLimit = limit;
  }
}
