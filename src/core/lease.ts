/**
 * A value kept in a lease record beside the owner and token (a checkpoint, a leader's address):
 * a string, or bytes. It is written only under the holder's token and handed to the next holder.
 */
export type LeaseData = string | Uint8Array;

/** What a store holds for one resource. */
export interface LeaseRecord {
  /** The name of the owned thing: non-empty UTF-8, at most 512 bytes. */
  readonly resource: string;
  /** Who holds it; `''` after a graceful release. */
  readonly owner: string;
  /** Fencing token: strictly increasing per resource with every acquire, never reset. */
  readonly token: number;
  /** When the claim lapses unless renewed, in ms since the epoch on the store's time authority; `0` after release. */
  readonly expiresAt: number;
  /**
   * The lease data: the last value written under a token of this record (`writeData`, or a renew
   * or release carrying data), kept through release and expiry; `null` when none was written. On
   * a grant, the value the previous holders left. Absent when there is none (and on stores without
   * `capabilities.data`).
   */
  readonly data?: LeaseData | null;
}

/** A claim a store granted: the record as written plus the TTL it was written with. */
export interface Lease extends LeaseRecord {
  /** The time to live, in ms, this grant (or its last renewal) was written with. */
  readonly ttlMs: number;
}

/**
 * The one rule for "someone holds this record": it has an owner and, at `now` (on the store's
 * time, or the caller's estimate of it), `expiresAt` plus `allowanceMs` has not passed. The
 * allowance is what a contender waits past `expiresAt` before treating the record as free: the
 * store's `maxClockSkewMs`, plus its `expiryLagMs` where the store frees records late. A record
 * that is not live may be acquired.
 */
export function isLive(
  record: Pick<LeaseRecord, 'owner' | 'expiresAt'>,
  now: number,
  allowanceMs = 0,
): boolean {
  return record.owner !== '' && now <= liveUntil(record, allowanceMs);
}

/** The last instant at which `isLive(record, now, allowanceMs)` holds for an owned record. */
export function liveUntil(record: Pick<LeaseRecord, 'expiresAt'>, allowanceMs = 0): number {
  return record.expiresAt + allowanceMs;
}

/** What identifies one grant of a lease: enough to release it. */
export type LeaseRef = Pick<Lease, 'resource' | 'owner' | 'token'>;
