import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease } from '../../core/lease.js';

/** What the group and first-free transactions run on, inside the transaction, on its one reading of the clock. */
export interface GroupSteps {
  /** The single acquire's statement: the lease, or `null` when the record is live. */
  take(resource: string, owner: string, ttlMs: number, now: number): Lease | null;
  /**
   * Whether the record is live, as `take` would decide at `now` (it would refuse); throws
   * `RECORD_INVALID` for a record leasehold did not write (on which `take` would fail).
   */
  held(resource: string, now: number): boolean;
}

/**
 * The body of `acquireAll`'s IMMEDIATE transaction. Under the write lock what the probes read
 * cannot change before the writes: every member is probed at `now`, and only when none is live
 * are they all taken. A refused group writes nothing. Every member is probed even after a live
 * one, so a corrupt record anywhere in the group fails it (`held` throws `RECORD_INVALID`).
 */
export function takeAll(
  steps: GroupSteps,
  resources: readonly string[],
  owner: string,
  ttlMs: number,
  now: number,
): Lease[] | null {
  let live = false;
  for (const resource of resources) if (steps.held(resource, now)) live = true;
  if (live) return null;
  return resources.map((resource) => {
    const lease = steps.take(resource, owner, ttlMs, now);
    if (lease) return lease;
    // Cannot happen under the write lock; thrown, it rolls the whole group back.
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `SQLite acquireAll failed: ${JSON.stringify(resource)} was refused after its probe found it free`,
      { retryable: false },
    );
  });
}

/**
 * The body of `acquireFirst`'s IMMEDIATE transaction: the single acquire on each candidate in
 * order until one is granted. A live record's statement writes nothing, so only the grant writes.
 */
export function takeFirst(
  steps: GroupSteps,
  resources: readonly string[],
  owner: string,
  ttlMs: number,
  now: number,
): Lease | null {
  for (const resource of resources) {
    const lease = steps.take(resource, owner, ttlMs, now);
    if (lease) return lease;
  }
  return null;
}
