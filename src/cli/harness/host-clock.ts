import type { Clock, TimerHandle } from '../../index.js';
import { systemClock } from '../../index.js';

/**
 * The clock every process of demo and verify records on: `process.hrtime.bigint()`, which Node
 * reads from `CLOCK_MONOTONIC` on Linux. That clock is one kernel counter shared by every process
 * of the host, so instants read in different worker processes compare directly, with no
 * per-process offset to estimate (unlike `performance.timeOrigin + performance.now()`, whose
 * origin each process fixes on its own when it starts; a process preempted between the two reads
 * that fix it would run its whole timeline off by that delay). Milliseconds since boot,
 * nanosecond resolution.
 */
export const HOST_CLOCK = 'CLOCK_MONOTONIC (process.hrtime.bigint)';

/** Now on the host clock, in ms. */
export function hostNow(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * Times are written to the history in ms with 3 decimals (1 µs). Rounding a belief's start down
 * and its end up keeps the recorded interval a superset of the measured one: the only measurement
 * error left is this rounding, and it can only make an overlap more likely to be reported.
 */
export const ROUNDING_MS = 0.001;

export function floorUs(ms: number): number {
  return Math.floor(ms * 1000) / 1000;
}

export function ceilUs(ms: number): number {
  return Math.ceil(ms * 1000) / 1000;
}

/**
 * A worker's clock: `monotonic()` is the host clock itself, so a lease's `validUntil` (the holder's
 * own deadline) is already an instant on the shared clock and is recorded as is; `now()` (the wall
 * clock a local-clock store writes into `expiresAt`) runs `skewMs` off the real one. For a clock
 * that also runs fast or slow, see `driftingClock`.
 */
export function workerClock(skewMs: number): WorkerClock {
  return {
    now: () => Date.now() + skewMs,
    monotonic: hostNow,
    toHost: (monotonic) => monotonic,
    setTimeout: (fn: () => void, ms: number, options?: { keepAlive?: boolean }): TimerHandle =>
      systemClock.setTimeout(fn, ms, options),
  };
}

/** A worker's clock, which can say where on the host clock one of its monotonic instants falls. */
export interface WorkerClock extends Clock {
  /** The host-clock instant at which `monotonic()` reads `monotonic` (a lease's `validUntil`). */
  toHost(monotonic: number): number;
}
