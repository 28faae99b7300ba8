import { isLive, type LeaseRecord } from '../../core/lease.js';

// Pure on purpose: the dashboard's page (src/cli/dashboard/page/) bundles this module for the
// browser, so the server and the page judge a record by this one rule. It imports only
// core/lease.ts, which imports nothing.

/** What the dashboard and `leasehold watch` show for a record. */
export type LeaseState = 'held' | 'at-risk' | 'expired' | 'released';

/**
 * The state of `record` at `now` (this machine's clock), as `viewRecord` judges it (released
 * without an owner, else held while `isLive` with the skew allowance), with `held` split: a holder
 * renews at least every third of its TTL (design rule 4), so time left under half of
 * `ttlEstimateMs` means it missed a renewal, and the record is `at-risk`. So is a record past
 * `expiresAt` but still inside the store's clock-skew allowance.
 */
export function leaseState(
  record: Pick<LeaseRecord, 'owner' | 'expiresAt'>,
  now: number,
  skewMs: number,
  ttlEstimateMs: number,
): LeaseState {
  if (record.owner === '') return 'released';
  if (!isLive(record, now, skewMs)) return 'expired';
  const left = record.expiresAt - now;
  return left < 0 || left < ttlEstimateMs / 2 ? 'at-risk' : 'held';
}

/**
 * Records whose resource starts with this are leasehold's own bookkeeping (fleet membership
 * slots, election records), not work: the dashboard hides them from the work views by default.
 */
export const INTERNAL_PREFIX = 'leasehold/';
