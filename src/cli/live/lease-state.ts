import type { LeaseRecord } from '../../core/lease.js';
import { viewRecord } from '../format.js';

/** What the dashboard and `leasehold watch` show for a record. */
export type LeaseState = 'held' | 'at-risk' | 'expired' | 'released';

/**
 * The state of `record` at `now` (this machine's clock), as `viewRecord` judges it, with `held`
 * split: a holder renews at least every third of its TTL (design rule 4), so time left under half
 * of `ttlEstimateMs` means it missed a renewal, and the record is `at-risk`. So is a record past
 * `expiresAt` but still inside the store's clock-skew allowance.
 */
export function leaseState(
  record: LeaseRecord,
  now: number,
  skewMs: number,
  ttlEstimateMs: number,
): LeaseState {
  const view = viewRecord(record, now, skewMs);
  if (view.state !== 'held') return view.state;
  const left = view.expiresInMs ?? 0;
  return left < 0 || left < ttlEstimateMs / 2 ? 'at-risk' : 'held';
}

/**
 * Records whose resource starts with this are leasehold's own bookkeeping (fleet membership
 * slots, election records), not work: the dashboard hides them from the work views by default.
 */
export const INTERNAL_PREFIX = 'leasehold/';
