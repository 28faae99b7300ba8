import { checkInteger } from '../../core/options.js';
import { systemClock, type Clock } from '../../core/time.js';

/** How a `MemoryStore` reads time. */
export interface MemoryStoreOptions {
  /** Where "now" comes from when deciding expiry. @default the system clock */
  clock?: Clock;
  /** Clock disagreement, in ms, a contender allows before treating a record as expired. @default 0 (one process, one clock) */
  maxClockSkewMs?: number;
}

export const MEMORY_DEFAULTS = Object.freeze({ maxClockSkewMs: 0 });

export function resolveMemoryOptions(
  options: MemoryStoreOptions = {},
): Required<MemoryStoreOptions> {
  return {
    clock: options.clock ?? systemClock,
    maxClockSkewMs: checkInteger(
      'maxClockSkewMs',
      options.maxClockSkewMs ?? MEMORY_DEFAULTS.maxClockSkewMs,
      0,
      3_600_000,
    ),
  };
}
