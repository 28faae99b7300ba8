import type { LeaseRecord } from '../core/lease.js';
import type { Clock, TimerHandle } from '../core/time.js';
import type { HeldLease } from '../client/held-lease.js';
import type { LeaseClient } from '../client/lease-client.js';
import { shuffle } from './util.js';

export interface TakerOptions {
  readonly client: LeaseClient;
  readonly clock: Clock;
  /** The most resources one `acquireMany` asks for. */
  readonly batchSize: number;
  /** The most `acquireMany` calls in flight at once, across every caller. */
  readonly maxInFlight: number;
  /** A batch slower than this counts as a sign of an overloaded store. */
  readonly slowMs: number;
  readonly onAcquired: (lease: HeldLease) => void;
  /** A resource someone else holds; `holder` is its record when the store reported it. */
  readonly onRefused: (resource: string, holder: LeaseRecord | undefined) => void;
  /** Whether bulk work should wait (the leases already held come first). */
  readonly busy: () => boolean;
  /** How often a busy caller is asked again while nothing is in flight. */
  readonly recheckMs: number;
  /** A batch taken in the background (`soon`) failed. */
  readonly onError: (error: unknown) => void;
}

/**
 * Whether renewals are falling behind: some held lease went two beats without a successful
 * renewal (or is at risk). Taking more then would only add store work that competes with the
 * renewals of what is already held, so bulk takes wait until they catch up (`TakerOptions.busy`).
 */
export function renewalsBehind(
  client: Pick<LeaseClient, 'held' | 'heartbeatMs'>,
  clock: Clock,
): boolean {
  const now = clock.monotonic();
  const twoBeats = 2 * client.heartbeatMs;
  for (const lease of client.held()) {
    if (lease.state === 'at-risk') return true;
    // The validity window is three times what is left at `atRiskAt`.
    const renewedFrom = lease.validUntil - 3 * (lease.validUntil - lease.atRiskAt);
    if (now - renewedFrom > twoBeats) return true;
  }
  return false;
}

/** How long takes asked for one by one (releases seen, expiry timers) are gathered into one batch. */
const GATHER_MS = 10;

/**
 * Takes leases in batches for a manager: one `acquireMany` per batch, a bounded number in flight,
 * never asking for more than the caller still wants (so a worker never overshoots its share).
 */
export class Taker {
  private inFlight = 0;
  /** Resources asked for by batches in flight, across every take. */
  private asked = 0;
  /** The in-flight limit now: halved when a batch is slow or fails, raised by one after a quick one. */
  private window: number;
  private readonly queue: (() => void)[] = [];
  /** Ends the waits of callers asked again later (busy, nothing in flight): `stop` calls them. */
  private readonly sleepers = new Set<() => void>();
  private readonly taking = new Set<string>();
  /**
   * Resources announced free (`soon`) while a batch of ours was trying them: that batch may have
   * read the record before the release and been refused, so a refusal of one of these is tried
   * again rather than held off for a scan.
   */
  private readonly freedWhileTaking = new Set<string>();
  /**
   * Resources announced free (`soon`) when the batches in flight already asked for all the room:
   * tried once a batch ends with a refusal (room it asked for is left), not dropped until a scan.
   */
  private readonly roomless = new Set<string>();
  private readonly gathered = new Set<string>();
  private room: () => number = () => 0;
  private gatherTimer: TimerHandle | undefined;
  private stopped = false;

  constructor(private readonly options: TakerOptions) {
    this.window = options.maxInFlight;
  }

  /**
   * Tries `candidates` in order while `room()` (how many more leases the caller wants, not
   * counting batches in flight) allows; resolves to how many were taken. Every take shares one
   * count of what is in flight, so takes running at once never overshoot `room()` together.
   */
  async take(
    candidates: readonly string[],
    room: () => number,
    untried?: (resources: string[]) => void,
  ): Promise<number> {
    const { client, batchSize, maxInFlight } = this.options;
    let got = 0;
    let next = 0;
    const lane = async (): Promise<void> => {
      while (!this.stopped && next < candidates.length) {
        const size = Math.min(batchSize, room() - this.asked);
        if (size <= 0) return;
        const batch: string[] = [];
        while (batch.length < size && next < candidates.length) {
          const resource = candidates[next++]!;
          if (!this.taking.has(resource) && !client.lease(resource)) batch.push(resource);
        }
        if (batch.length === 0) continue;
        this.asked += batch.length;
        try {
          const taken = await this.acquire(batch);
          got += taken; // not `got += await …`: that would add to the value read before the wait
        } finally {
          this.asked -= batch.length;
        }
      }
    };
    await Promise.all(Array.from({ length: maxInFlight }, lane));
    // Those the room did not reach (see `untried`), unless held or being taken meanwhile.
    if (untried && next < candidates.length)
      untried(candidates.slice(next).filter((r) => !this.taking.has(r) && !client.lease(r)));
    return got;
  }

  /** Takes `resource` in a batch gathered over a few milliseconds, while `room()` allows then. */
  soon(resource: string, room: () => number): void {
    if (this.stopped) return;
    this.room = room;
    if (this.taking.has(resource)) {
      this.freedWhileTaking.add(resource);
      return;
    }
    this.gathered.add(resource);
    this.gatherTimer ??= this.options.clock.setTimeout(() => {
      this.gatherTimer = undefined;
      const batch: string[] = [];
      for (const r of this.gathered) {
        if (this.taking.has(r)) this.freedWhileTaking.add(r);
        else batch.push(r);
      }
      this.gathered.clear();
      this.take(shuffle(batch), this.room, (left) => {
        for (const r of left) this.roomless.add(r);
      }).catch((error: unknown) => this.options.onError(error));
    }, GATHER_MS);
  }

  /** Drops what is gathered and ends every wait for a slot at once: a stopping caller waits for nothing. */
  stop(): void {
    this.stopped = true;
    this.gatherTimer?.clear();
    this.gathered.clear();
    this.roomless.clear();
    for (const wake of [...this.sleepers]) wake();
    for (const next of this.queue.splice(0)) next();
  }

  private async acquire(candidates: string[]): Promise<number> {
    await this.slot();
    // Another batch may have taken some of these while this one waited for its slot.
    const { client } = this.options;
    const batch = candidates.filter((r) => !this.taking.has(r) && !client.lease(r));
    for (const resource of batch) this.taking.add(resource);
    const again: string[] = [];
    let refusedSome = false;
    try {
      if (this.stopped || batch.length === 0) return 0;
      const started = this.options.clock.monotonic();
      let outcomes;
      try {
        outcomes = await client.tryAcquireMany(batch);
      } catch (error) {
        this.adapt(false, 0);
        throw error;
      }
      this.adapt(true, this.options.clock.monotonic() - started);
      let got = 0;
      for (const outcome of outcomes) {
        if (outcome.lease) {
          got++;
          this.options.onAcquired(outcome.lease);
        } else if (this.freedWhileTaking.has(outcome.resource)) again.push(outcome.resource);
        else {
          refusedSome = true;
          this.options.onRefused(outcome.resource, outcome.holder);
        }
      }
      return got;
    } finally {
      for (const resource of batch) {
        this.taking.delete(resource);
        this.freedWhileTaking.delete(resource);
      }
      this.inFlight--;
      this.queue.shift()?.();
      // Once more, as announced now: a refusal that read the record before its release.
      for (const resource of again) this.soon(resource, this.room);
      // A refusal left room this batch had asked for: what found none when announced, now.
      if ((refusedSome || again.length > 0) && this.roomless.size > 0) {
        const waiting = [...this.roomless];
        this.roomless.clear();
        for (const resource of waiting) this.soon(resource, this.room);
      }
    }
  }

  /**
   * Waits for a free slot: at most `window` calls at once, and none while the caller is busy
   * (what it holds comes first). A busy caller with nothing in flight is asked again every
   * `recheckMs`; a stopped taker stops waiting (its batch is then dropped).
   */
  private async slot(): Promise<void> {
    for (;;) {
      if (this.stopped) break;
      const full = this.inFlight >= this.window;
      if (!full && !this.options.busy()) break;
      if (full || this.inFlight > 0) await new Promise<void>((resolve) => this.queue.push(resolve));
      else await this.recheckLater();
    }
    this.inFlight++;
  }

  /** Resolves after `recheckMs`, or at once when the taker stops. */
  private recheckLater(): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        this.sleepers.delete(wake);
        timer.clear();
        resolve();
      };
      const timer = this.options.clock.setTimeout(wake, this.options.recheckMs);
      this.sleepers.add(wake);
    });
  }

  /** Additive increase, multiplicative decrease of the window, from how the last batch went. */
  private adapt(ok: boolean, ms: number): void {
    if (!ok || ms > this.options.slowMs) this.window = Math.max(1, Math.floor(this.window / 2));
    else this.window = Math.min(this.options.maxInFlight, this.window + 1);
  }
}
