import type { LeaseData } from '../core/lease-data.js';
import type { Lease } from '../core/lease.js';
import { withDeadline } from '../core/deadline.js';
import type { LeaseStore } from '../core/store.js';
import { validUntil, type Clock, type TimerHandle } from '../core/time.js';
import type { ClientReporter } from './client-reporter.js';
import type { HeldLease } from './held-lease.js';

export interface HeartbeatOptions {
  readonly store: LeaseStore;
  readonly clock: Clock;
  readonly heartbeatMs: number;
  readonly maxClockSkewMs: number;
  readonly autoRenew: boolean;
  /** Called once for a lease that a late renewal extended after it was declared lost. */
  readonly onLateRenewal: (held: HeldLease) => void;
  /** Tells the diagnostics channels and the logger of renewals and store errors. */
  readonly report: ClientReporter;
}

/**
 * Keeps every lease of one client alive with one timer and one `renewMany` per beat, and watches
 * their deadlines with a second timer that does not depend on the store answering (design rule 2).
 */
export class Heartbeat {
  private readonly leases = new Set<HeldLease>();
  private beatTimer: TimerHandle | undefined;
  private watchTimer: TimerHandle | undefined;
  private watchAt = Infinity;
  private inFlight: Promise<void> | undefined;
  private failures = 0;
  private stopped = false;
  /** Holds the process open while auto-renewed leases are held (the timers above never do). */
  private keepAlive: NodeJS.Timeout | undefined;
  private refed = true;

  constructor(private readonly options: HeartbeatOptions) {}

  add(held: HeldLease): void {
    this.leases.add(held);
    this.armWatchdog(held);
    if (this.options.autoRenew && !this.stopped) {
      if (!this.beatTimer) this.scheduleBeat(this.options.heartbeatMs);
      if (!this.keepAlive) {
        this.keepAlive = setInterval(() => undefined, 1 << 30);
        if (!this.refed) this.keepAlive.unref();
      }
    }
  }

  /**
   * Whether held auto-renewed leases keep the process alive (they do by default, like a
   * listening server; `false` is `server.unref()`).
   */
  setRef(refed: boolean): void {
    this.refed = refed;
    if (refed) this.keepAlive?.ref();
    else this.keepAlive?.unref();
  }

  /** Leases being kept, in acquisition order. */
  held(): HeldLease[] {
    return [...this.leases];
  }

  /** A renewal of `held` alone, sent now; resolves to whether it is still held. */
  async renewOne(held: HeldLease, data?: LeaseData | null): Promise<boolean> {
    this.expireDue();
    if (held.isTerminal) return false;
    const tSent = this.options.clock.monotonic();
    held.lastSentAt = tSent;
    try {
      const result = await this.options.store.renew(held.lease, undefined, data);
      this.apply(held, result, tSent);
    } catch (error) {
      this.options.report.storeError('renew', error, 1);
      this.failed(held, error);
      throw error;
    } finally {
      this.armWatchdog();
    }
    return !held.isTerminal;
  }

  /** Waits for a renewal in flight, so callers see its outcome before acting. */
  async settled(): Promise<void> {
    await this.inFlight;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.keepAlive);
    this.keepAlive = undefined;
    this.beatTimer?.clear();
    this.watchTimer?.clear();
    this.beatTimer = this.watchTimer = undefined;
    this.watchAt = Infinity;
  }

  /** Forgets a lease that was lost or released. */
  end(held: HeldLease): void {
    this.leases.delete(held);
    if (this.leases.size === 0) {
      clearInterval(this.keepAlive);
      this.keepAlive = undefined;
      this.watchTimer?.clear();
      this.watchTimer = undefined;
      this.watchAt = Infinity;
    }
  }

  private scheduleBeat(ms: number): void {
    this.beatTimer?.clear();
    this.beatTimer = this.options.clock.setTimeout(() => {
      this.beatTimer = undefined;
      void this.beat();
    }, ms);
  }

  private async beat(): Promise<void> {
    if (this.stopped || this.inFlight) return;
    try {
      await this.renewDue();
    } finally {
      if (!this.stopped && this.leases.size > 0) {
        this.scheduleBeat(this.failures === 0 ? this.options.heartbeatMs : this.retryDelay());
      }
    }
  }

  private async renewDue(): Promise<void> {
    this.expireDue();
    const now = this.options.clock.monotonic();
    // Skip only leases renewed (or acquired) within the last quarter beat, so none goes longer
    // than 1.25 beats between renewals; options guarantee the validity window spans two beats.
    const recent = this.options.heartbeatMs / 4;
    const batch = [...this.leases].filter(
      (h) => !h.isTerminal && (h.failing || now - h.lastSentAt >= recent),
    );
    if (batch.length > 0) {
      this.inFlight = this.renewBatch(batch);
      await this.inFlight;
      this.inFlight = undefined;
    }
  }

  /**
   * One `renewMany` for the batch. Its answer is applied whenever it comes (a late success on a
   * lease already declared lost gets that lease released), but the beat waits for it two beats at
   * most: a store call that never returns must not stop later renewals.
   */
  private async renewBatch(batch: HeldLease[]): Promise<void> {
    const tSent = this.options.clock.monotonic();
    for (const held of batch) held.lastSentAt = tSent;
    let gaveUp = false; // a call already reported as unanswered is not reported again when it fails
    const call = Promise.resolve()
      .then(() => this.options.store.renewMany(batch.map((h) => h.lease)))
      .then(
        (results) => {
          this.failures = 0;
          batch.forEach((held, i) => this.apply(held, results[i] ?? null, tSent));
        },
        (error: unknown) => {
          this.failures++;
          if (!gaveUp) this.options.report.storeError('renewMany', error, batch.length);
          for (const held of batch) this.failed(held, error);
        },
      )
      .finally(() => this.armWatchdog());
    // `call` never rejects: a rejection here is the patience running out.
    const patience = 2 * this.options.heartbeatMs;
    const answered = await withDeadline(call, patience, () => undefined, {
      clock: this.options.clock,
    }).then(
      () => true,
      () => false,
    );
    if (!answered) {
      this.failures++;
      gaveUp = true;
      this.options.report.storeTimeout('renewMany', patience, batch.length);
      for (const held of batch) this.failed(held, 'the store has not answered for two heartbeats');
    }
  }

  private apply(held: HeldLease, result: Lease | null, tSent: number): void {
    if (result === null) {
      held.markLost(
        'the store no longer shows it as ours (it expired and was taken, or was released)',
        'taken',
      );
      return;
    }
    const until = validUntil(tSent, result.ttlMs, this.options.maxClockSkewMs);
    if (held.markRenewed(result, until)) this.options.report.renewed(held, tSent);
    else if (held.state === 'lost') this.options.onLateRenewal(held);
  }

  private failed(held: HeldLease, error: unknown): void {
    held.failing = true;
    held.markAtRisk(`renewal failed: ${error instanceof Error ? error.message : String(error)}`);
  }

  /** 100 ms doubling per consecutive failure, capped at the heartbeat, with ±25 % jitter. */
  private retryDelay(): number {
    const base = Math.min(this.options.heartbeatMs, 100 * 2 ** Math.min(this.failures - 1, 16));
    return Math.round(base * (0.75 + Math.random() * 0.5));
  }

  /** Moves every lease whose moment has come: at-risk a third of the TTL before its deadline, lost at it. */
  private expireDue(): void {
    const now = this.options.clock.monotonic();
    for (const held of this.leases) {
      if (now >= held.validUntil) {
        held.markLost(
          `its validity deadline passed without a successful renewal${held.failing ? ' (renewals were failing)' : ''}`,
          held.failing ? 'store-error' : 'expired',
        );
      } else if (now >= held.atRiskAt) {
        held.markAtRisk(
          `less than a third of the TTL is left (${Math.round(held.validUntil - now)} ms)`,
        );
      }
    }
  }

  /**
   * Arms the one deadline timer at the earliest moment any lease changes state. With `added`, only
   * that lease can move the moment earlier (O(1) per acquire); otherwise every lease is scanned.
   */
  private armWatchdog(added?: HeldLease): void {
    let next = added && this.watchTimer ? this.watchAt : Infinity;
    for (const held of added ? [added] : this.leases) {
      const at = held.state === 'held' ? held.atRiskAt : held.validUntil;
      if (at < next) next = at;
    }
    if (next === this.watchAt && this.watchTimer) return;
    this.watchTimer?.clear();
    this.watchTimer = undefined;
    this.watchAt = next;
    if (next === Infinity || this.stopped) return;
    this.watchTimer = this.options.clock.setTimeout(() => {
      this.watchTimer = undefined;
      this.watchAt = Infinity;
      try {
        this.expireDue();
      } finally {
        this.armWatchdog();
      }
    }, next - this.options.clock.monotonic());
  }
}
