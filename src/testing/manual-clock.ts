import type { Clock, TimerHandle } from '../core/time.js';

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when told to. `advance(ms)` runs every timer that falls due, in order,
 * letting promise chains settle between them, so heartbeats and deadlines can be tested exactly.
 */
export class ManualClock implements Clock {
  private mono = 0;
  private wallOffset: number;
  private seq = 0;
  private readonly timers = new Set<Pending>();

  /**
   * Starts with monotonic time at 0 and the wall clock at `startWallMs` (ms since the epoch;
   * 2030-01-01 by default).
   */
  constructor(startWallMs = Date.UTC(2030, 0, 1)) {
    this.wallOffset = startWallMs;
  }

  now(): number {
    return this.wallOffset + this.mono;
  }

  monotonic(): number {
    return this.mono;
  }

  /** Steps the wall clock by `ms` without moving monotonic time (an NTP step, or skew). */
  stepWall(ms: number): void {
    this.wallOffset += ms;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const pending: Pending = { at: this.mono + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.add(pending);
    return { clear: () => void this.timers.delete(pending) };
  }

  /**
   * Moves time forward by `ms` without running any timer: what a process sees after its event
   * loop was frozen (a long GC pause, SIGSTOP). The overdue timers run at the next `advance`.
   */
  jump(ms: number): void {
    this.mono += ms;
  }

  /** Number of timers waiting to fire. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing due timers in order and settling promises after each. */
  async advance(ms: number): Promise<void> {
    const target = this.mono + ms;
    await settle();
    for (;;) {
      const next = this.nextDue(target);
      if (!next) break;
      this.timers.delete(next);
      this.mono = Math.max(this.mono, next.at);
      next.fn();
      await settle();
    }
    this.mono = target;
    await settle();
  }

  private nextDue(target: number): Pending | undefined {
    let best: Pending | undefined;
    for (const t of this.timers) {
      if (t.at <= target && (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)))
        best = t;
    }
    return best;
  }
}

/** Lets pending promise callbacks and I/O callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
