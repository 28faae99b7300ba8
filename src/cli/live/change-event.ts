/**
 * What an observer saw change, derived from successive listings of the store (and its `watch`
 * hints). `seen`: a record present at the first listing. `acquired`: a new grant (with the
 * previous holder when one is known: a takeover after expiry). `handoff`: a grant that follows a
 * release by another owner within `HANDOFF_WINDOW_MS`. `released`, `expired`: a grant ended
 * (`expired` when it passed `expiresAt` plus the store's skew allowance unrenewed, or vanished
 * from a store that deletes lapsed records). `renewed`: a grant seen expired came back (its holder
 * renewed it before anyone took it). `removed`: the record is gone from the store.
 */
export type ChangeType =
  'seen' | 'acquired' | 'handoff' | 'released' | 'expired' | 'renewed' | 'removed';

export interface ChangeEvent {
  readonly type: ChangeType;
  /** When it was observed, in ms since the epoch on this machine's clock. */
  readonly at: number;
  readonly resource: string;
  /** The owner of the grant concerned (`''` for a released record seen first). */
  readonly owner: string;
  readonly token: number;
  /** The record's `expiresAt` when observed. */
  readonly expiresAt: number;
  /** For `acquired` and `handoff`: who held the resource before, when this observer saw it. */
  readonly previousOwner?: string;
  readonly previousToken?: number;
}

/** A release followed by another owner's grant within this is a handoff, not a fresh acquire. */
export const HANDOFF_WINDOW_MS = 5_000;

/** One grant as the observer saw it: from when it was first seen until it ended (`to: null` while it lasts). */
export interface Span {
  readonly owner: string;
  readonly token: number;
  readonly from: number;
  to: number | null;
  end: 'released' | 'expired' | 'replaced' | null;
}
