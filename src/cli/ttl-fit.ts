import { resolveClientOptions } from '../client/client-options.js';
import { ErrorCode, isLeaseError, LIMITS, type LeaseStore } from '../index.js';
import { formatDuration } from './duration.js';
import { CliFailure } from './output.js';

/** A `--ttl` as the user gave it, or its default. */
export interface TtlFlag {
  ms: number;
  /** The flag was not given: `ms` is its default. */
  isDefault?: boolean;
}

/**
 * Checks a command's `--ttl` against the store it opened, as the client will with a heartbeat of
 * TTL/4: the lease must stay valid for two heartbeats after the drift and the store's clock-skew
 * allowance are taken off. A usage error (exit 2) names the shortest TTL that works and what else
 * to change; the CLI sets no `heartbeatMs` or `maxClockSkewMs` of its own.
 */
export function checkTtlFits(flag: TtlFlag, store: LeaseStore): void {
  if (fits(flag.ms, store)) return;
  const skew = formatDuration(store.maxClockSkewMs);
  const given = `--ttl ${formatDuration(flag.ms)}${flag.isDefault ? ' (the default)' : ''}`;
  const lower =
    'lower maxClockSkewMs in the store URL if the clocks of every process using it agree that closely';
  const least = shortestFittingTtl(store);
  throw new CliFailure(
    least === undefined
      ? `${given} cannot fit this store's clock-skew allowance of ${skew}: ${lower}`
      : `${given} is too short for this store's clock-skew allowance of ${skew}: use --ttl ${suggested(least)} or more, or ${lower}`,
    2,
  );
}

/** `minMs` as a `--ttl` to type, rounded up: to 1 ms below a second, 0.1 s below a minute, else 1 s. */
function suggested(minMs: number): string {
  if (minMs < 1000) return `${minMs}ms`;
  if (minMs < 60_000) return `${Math.ceil(minMs / 100) / 10}s`;
  return `${Math.ceil(minMs / 1000)}s`;
}

/** What the client accepts for `ttlMs` on `store` with its default heartbeat. */
function fits(ttlMs: number, store: LeaseStore): boolean {
  try {
    resolveClientOptions({ store, owner: 'ttl-check', ttlMs });
    return true;
  } catch (error) {
    if (isLeaseError(error, ErrorCode.INVALID_ARGUMENT)) return false;
    throw error;
  }
}

/**
 * The shortest TTL from which every longer one fits, or `undefined` when none up to
 * `LIMITS.ttlMaxMs` does. The margin grows by at least 1 ms every 4 ms of TTL (a heartbeat is a
 * quarter of it, drift 1 %) but not at every step, so the search is on four TTLs in a row.
 */
function shortestFittingTtl(store: LeaseStore): number | undefined {
  const run = (t: number): boolean =>
    [t, t + 1, t + 2, t + 3].every((ttl) => ttl > LIMITS.ttlMaxMs || fits(ttl, store));
  let high: number = LIMITS.ttlMinMs;
  while (!run(high)) {
    if (high >= LIMITS.ttlMaxMs) return undefined;
    high = Math.min(high * 2, LIMITS.ttlMaxMs);
  }
  let low: number = LIMITS.ttlMinMs - 1; // does not fit (or is below the floor)
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (run(mid)) high = mid;
    else low = mid;
  }
  return high;
}
