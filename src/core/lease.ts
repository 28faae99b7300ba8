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
}

/** A claim a store granted: the record as written plus the TTL it was written with. */
export interface Lease extends LeaseRecord {
  readonly ttlMs: number;
}

/** Whether a record is owned and unexpired at `now` (store time), allowing `skewMs` of clock disagreement. */
export function isLive(record: LeaseRecord, now: number, skewMs = 0): boolean {
  return record.owner !== '' && record.expiresAt + skewMs >= now;
}

/** What identifies one grant of a lease: enough to release it. */
export type LeaseRef = Pick<Lease, 'resource' | 'owner' | 'token'>;
