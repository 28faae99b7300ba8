import { leaseState, type LeaseState } from '../../live/lease-state.js';
import type { PageRecord } from './model.js';

/** A record's state at `now`, judged by the server's own rule (`leaseState`). */
export function stateOf(record: PageRecord, now: number, skewMs: number): LeaseState {
  return leaseState(record, now, skewMs, record.ttlMs);
}

/** The order of the state column: the records that need a look first. */
export const STATE_ORDER: Readonly<Record<LeaseState, number>> = {
  expired: 0,
  'at-risk': 1,
  held: 2,
  released: 3,
};
