import { openQuietly } from '../open-quietly.js';
import { checkTtlFits, type TtlFlag } from '../ttl-fit.js';

/** What a run needs to know of its store before the workers start. */
export interface StoreFacts {
  /** The store's clock-skew allowance. */
  maxClockSkewMs: number;
  /** Whose clock decides expiry: the store's, or each client's (`local`). */
  clock: 'store' | 'local';
}

/**
 * Opens the store once before the worker processes start: checks the URL, the driver, the
 * connection and that the TTL fits the store's clock-skew allowance, and reads `resource`, which
 * creates a SQLite schema before several processes race to. Throws what opening or the check
 * threw.
 */
export async function probeStore(url: string, ttl: TtlFlag, resource: string): Promise<StoreFacts> {
  const probe = await openQuietly(url);
  try {
    checkTtlFits(ttl, probe);
    await probe.get(resource);
    return { maxClockSkewMs: probe.maxClockSkewMs, clock: probe.capabilities.clock };
  } finally {
    await probe.close().catch(() => undefined);
  }
}
