import type { Clock, TimerHandle } from '../../index.js';
import { systemClock } from '../../index.js';
import { hostNow, type WorkerClock } from './host-clock.js';

export type { WorkerClock } from './host-clock.js';

/** A worker's clock, and how to put an instant read on it back on the host clock. */
/** Where a drifting clock reads real time and schedules timers (the real ones by default). */
export interface TimeSources {
  /** The host clock, ms. */
  host: () => number;
  /** The wall clock, ms since the epoch. */
  wall: () => number;
  setTimeout: Clock['setTimeout'];
}

export interface DriftOptions {
  /** The rate error: `0.005` runs 0.5 % fast, `-0.02` 2 % slow. Above -1. */
  rate: number;
  /** A fixed offset of the wall clock (the `skew` fault), ms. @default 0 */
  skewMs?: number;
  /**
   * The wall clock is stepped back to the true time (plus `skewMs`) each time it has drifted this
   * far, as NTP steps a host's clock; the monotonic clock never is. `0`: the wall clock keeps true
   * time. @default Infinity (never stepped)
   */
  stepMs?: number;
}

/**
 * A clock running at `1 + rate` times real time, as on a host whose oscillator drifts: both the wall
 * clock (`now()`, what a local-clock store writes into `expiresAt`) and the monotonic clock
 * (`monotonic()`, what a holder's deadline is measured on) start from the real time at creation and
 * advance by real elapsed time × (1 + rate); `now()` in whole ms, as `Date.now()`. A timer of `ms` on it fires when it has counted `ms`:
 * after `ms / (1 + rate)` real time.
 */
export function driftingClock(options: DriftOptions, sources: TimeSources = realTime): WorkerClock {
  const { rate, skewMs = 0, stepMs = Infinity } = options;
  if (!(rate > -1)) throw new RangeError(`a clock rate must be above -100%, got ${rate}`);
  const speed = 1 + rate;
  const host0 = sources.host();
  const wall0 = sources.wall();
  const elapsed = (): number => sources.host() - host0;
  const wallDrift = (ms: number): number => (stepMs > 0 ? (ms * rate) % stepMs : 0);
  return {
    now: () => {
      const ms = elapsed();
      return Math.floor(wall0 + skewMs + ms + wallDrift(ms)); // whole ms, as Date.now()
    },
    monotonic: () => host0 + elapsed() * speed,
    toHost: (monotonic) => host0 + (monotonic - host0) / speed,
    setTimeout: (fn: () => void, ms: number, options?: { keepAlive?: boolean }): TimerHandle =>
      sources.setTimeout(fn, ms / speed, options),
  };
}

const realTime: TimeSources = {
  host: hostNow,
  wall: () => Date.now(),
  setTimeout: (fn, ms, options) => systemClock.setTimeout(fn, ms, options),
};
