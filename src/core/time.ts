/** A scheduled callback that can be cancelled. */
export interface TimerHandle {
  /** Cancels the callback if it has not run yet; calling it again does nothing. */
  clear(): void;
}

/**
 * Where leasehold reads time and schedules work. The system clock is the default;
 * tests inject a {@link "leasehold/testing"!ManualClock} so that no test waits on real time.
 */
export interface Clock {
  /** Wall-clock time in ms since the epoch: what a local-clock store writes into `expiresAt`. */
  now(): number;
  /** Monotonic time in ms (`performance.now()` by default): what a holder's deadline is measured on. */
  monotonic(): number;
  /**
   * Runs `fn` after `ms`. Background timers (heartbeats, deadlines) never keep the process alive;
   * `keepAlive` is for a wait the caller is awaiting, such as the backoff inside `acquire()`.
   */
  setTimeout(fn: () => void, ms: number, options?: { keepAlive?: boolean }): TimerHandle;
}

/** The real clock: `Date.now()`, `performance.now()` and `setTimeout`, timers `unref`'d unless `keepAlive`. */
export const systemClock: Clock = Object.freeze({
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout(fn: () => void, ms: number, options?: { keepAlive?: boolean }): TimerHandle {
    const timer = setTimeout(fn, Math.max(0, ms));
    if (!options?.keepAlive) timer.unref();
    return { clear: () => clearTimeout(timer) };
  },
});

/**
 * How much the holder's clock may run slow against the store's while both measure one TTL.
 * 1 % of the TTL plus 2 ms, as redlock does: quartz oscillators drift by parts per million,
 * so this covers virtual machines whose clocks are slewed hard by NTP, with room to spare.
 */
export function driftMs(ttlMs: number): number {
  return Math.ceil(ttlMs * 0.01) + 2;
}

/**
 * Design rule 2: the local monotonic instant until which a holder may believe in a lease it
 * asked for at `tSent` (taken just before the request left).
 */
export function validUntil(tSent: number, ttlMs: number, maxClockSkewMs: number): number {
  return tSent + ttlMs - driftMs(ttlMs) - maxClockSkewMs;
}

/**
 * Resolves after `ms` on `clock`, or rejects with `signal.reason` when it aborts first. The timer
 * keeps the process alive: someone is awaiting it.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      timer.clear();
      reject(signal?.reason);
    };
    const timer = clock.setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      ms,
      { keepAlive: true },
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Lets timers and I/O run before going on: what long synchronous work does between chunks. */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
