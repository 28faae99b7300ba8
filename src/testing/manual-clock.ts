import type { Clock, TimerHandle } from '../core/time.js';

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
  cleared: boolean;
}

/** Whether `a` falls due before `b` (by time, then by the order they were set). */
function before(a: Pending, b: Pending): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/**
 * A clock that moves only when told to. `advance(ms)` runs every timer that falls due, in order,
 * letting promise chains settle between them, so heartbeats and deadlines can be tested exactly.
 */
export class ManualClock implements Clock {
  private mono = 0;
  private wallOffset: number;
  private seq = 0;
  /** A binary min-heap of timers by due time; cleared ones stay until they reach the top. */
  private readonly heap: Pending[] = [];
  private live = 0;

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
    const pending: Pending = {
      at: this.mono + Math.max(0, ms),
      seq: this.seq++,
      fn,
      cleared: false,
    };
    this.push(pending);
    this.live++;
    return {
      clear: () => {
        if (pending.cleared) return;
        pending.cleared = true;
        this.live--;
      },
    };
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
    return this.live;
  }

  /** Moves time forward by `ms`, firing due timers in order and settling promises after each. */
  async advance(ms: number): Promise<void> {
    const target = this.mono + ms;
    await settle();
    for (;;) {
      const next = this.nextDue(target);
      if (!next) break;
      next.cleared = true;
      this.live--;
      this.mono = Math.max(this.mono, next.at);
      next.fn();
      await settle();
    }
    this.mono = target;
    await settle();
  }

  /** The first live timer due by `target`, taken off the heap; `undefined` when none is. */
  private nextDue(target: number): Pending | undefined {
    for (;;) {
      const top = this.heap[0];
      if (!top) return undefined;
      if (!top.cleared && top.at > target) return undefined;
      this.pop();
      if (!top.cleared) return top;
    }
  }

  private push(item: Pending): void {
    const heap = this.heap;
    let i = heap.push(item) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(item, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = item;
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && before(heap[right]!, heap[left]!) ? right : left;
      if (!before(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
}

/** Lets pending promise callbacks and I/O callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
