import { invalidArgument } from '../../core/errors.js';
import { checkInteger, checkKnownKeys, describe, optionKeys } from '../../core/options.js';
import { systemClock, type Clock } from '../../core/time.js';

/** How a `MemoryStore` reads time. */
export interface MemoryStoreOptions {
  /** Where "now" comes from when deciding expiry. @default the system clock */
  clock?: Clock;
  /** Clock disagreement, in ms, a contender allows before treating a record as expired. @default 0 (one process, one clock) */
  maxClockSkewMs?: number;
}

export const MEMORY_DEFAULTS = Object.freeze({ maxClockSkewMs: 0 });

const MEMORY_KEYS = optionKeys<MemoryStoreOptions>({ clock: true, maxClockSkewMs: true });

export function resolveMemoryOptions(
  options: MemoryStoreOptions = {},
): Required<MemoryStoreOptions> {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('MemoryStore options', options, MEMORY_KEYS);
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
