import type { LeaseData } from '../../core/lease-data.js';
import type { ZkTransaction } from './zookeeper-driver.js';
import type { ResourcePaths } from './zookeeper-paths.js';
import { encodeRecord, encodeZkData, ownerData, RELEASED } from './zookeeper-record.js';

/*
 * The `multi` transactions behind each transition (see zookeeper-paths.ts for the znodes). Each is
 * one atomic ZooKeeper transaction: every operation applies, or none. The driver reads a version of
 * 0 as "any version", so no check below relies on version 0: a record znode is written in the
 * transaction that creates it, and its version is 1 or more from then on.
 */

/** The token znode's data: none (only its version counts). */
const NO_DATA = Buffer.alloc(0);

/** The znode modes a transaction needs, from the driver. */
export interface Modes {
  readonly persistent: number;
  readonly ephemeral: number;
}

/**
 * Acquire of a resource acquired before: creates the hold (refused if it exists: held, or lapsed
 * and not yet taken over), counts the grant on the token znode and writes the record. Answers:
 * the token is the token znode's new version (result 1), `expiresAt` the record's mtime (result 2)
 * plus the TTL. A missing record znode fails the first operation with `NO_NODE`: see `firstAcquire`.
 */
export function acquireOps(
  tx: ZkTransaction,
  p: ResourcePaths,
  owner: string,
  ttlMs: number,
  modes: Modes,
): number {
  tx.create(p.hold, ownerData(owner), modes.ephemeral)
    .setData(p.token, NO_DATA, -1)
    .setData(p.record, encodeRecord(owner, ttlMs), -1);
  return 3;
}

/** The first acquire of a resource ever: creates its record and token znodes too (answers: 2, 3). */
export function firstAcquireOps(
  tx: ZkTransaction,
  p: ResourcePaths,
  owner: string,
  ttlMs: number,
  modes: Modes,
): number {
  const record = encodeRecord(owner, ttlMs);
  tx.create(p.record, record, modes.persistent)
    .create(p.token, NO_DATA, modes.persistent)
    .setData(p.token, NO_DATA, -1)
    .setData(p.record, record, -1)
    .create(p.hold, ownerData(owner), modes.ephemeral);
  return 5;
}

/**
 * Take-over of a lapsed lease whose hold znode still exists (its session lives on, but nobody
 * renewed it within its TTL): only if the record is still at the version that was judged lapsed
 * (no renewal, release or grant since), replaces the hold by one of this session, counts the grant
 * and writes the record (answers: 3, 4).
 */
export function takeoverOps(
  tx: ZkTransaction,
  p: ResourcePaths,
  recordVersion: number,
  owner: string,
  ttlMs: number,
  modes: Modes,
): number {
  tx.check(p.record, recordVersion)
    .remove(p.hold, -1)
    .create(p.hold, ownerData(owner), modes.ephemeral)
    .setData(p.token, NO_DATA, -1)
    .setData(p.record, encodeRecord(owner, ttlMs), -1);
  return 5;
}

/**
 * Renew: only if the hold still exists and the record is still at `recordVersion` (a version whose
 * owner and token were checked: read, or left by this store's own write for this grant), writes
 * the record again (its answer is the last operation). Every grant writes the record, so a record
 * still at that version proves no grant came since: the token znode needs no check of its own.
 * With `move`, the hold is re-created on this session (one whose timeout covers the new TTL).
 */
export function renewOps(
  tx: ZkTransaction,
  p: ResourcePaths,
  recordVersion: number,
  owner: string,
  ttlMs: number,
  move: { ephemeral: number } | undefined,
): number {
  if (move) {
    tx.remove(p.hold, -1).create(p.hold, ownerData(owner), move.ephemeral);
  } else {
    tx.check(p.hold, -1);
  }
  tx.setData(p.record, encodeRecord(owner, ttlMs), recordVersion);
  return move ? 3 : 2;
}

/**
 * Release: only if the record is still at `recordVersion` (as for renew), deletes the hold and
 * blanks the record.
 */
export function releaseOps(tx: ZkTransaction, p: ResourcePaths, recordVersion: number): number {
  tx.remove(p.hold, -1).setData(p.record, RELEASED, recordVersion);
  return 2;
}

/**
 * The write of lease data after a lease's own operations: the data znode created, written or
 * deleted (`null`) by whether it exists (`hasData`, as read or left by this store's last write);
 * nothing for `null` where there is none. A wrong guess is refused (`NODE_EXISTS`, `NO_NODE`) with
 * the rest of the `multi`, and read again.
 */
export function dataOps(
  tx: ZkTransaction,
  p: ResourcePaths,
  data: LeaseData | null,
  hasData: boolean,
  persistent: number,
): number {
  if (data === null) {
    if (!hasData) return 0;
    tx.remove(p.data, -1);
    return 1;
  }
  if (hasData) tx.setData(p.data, encodeZkData(data), -1);
  else tx.create(p.data, encodeZkData(data), persistent);
  return 1;
}

/**
 * `writeData`: only if the hold still exists and the record is still at `recordVersion` (renew's
 * conditions, as checks: the record is not written, so its `mtime` and the expiry stay), writes
 * the data znode.
 */
export function writeDataOps(
  tx: ZkTransaction,
  p: ResourcePaths,
  recordVersion: number,
  data: LeaseData | null,
  hasData: boolean,
  persistent: number,
): number {
  tx.check(p.hold, -1).check(p.record, recordVersion);
  return 2 + dataOps(tx, p, data, hasData, persistent);
}

/** Rough size of one lease's operations on `p`, at most, to keep one `multi` well under 1 MB. */
export function opBytesOf(p: ResourcePaths, owner: string): number {
  return 5 * (Buffer.byteLength(p.hold, 'utf8') + Buffer.byteLength(owner, 'utf8') + 64);
}

/** The largest `multi` this store sends, in bytes (ZooKeeper refuses packets over 1 MB). */
const MULTI_BYTES = 256 * 1024;

/** Items in groups whose operations stay under 256 KB together: one `multi` each. */
export function splitForMulti<T>(items: readonly T[], bytes: (item: T) => number): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const item of items) {
    const b = bytes(item);
    if (current.length > 0 && size + b > MULTI_BYTES) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += b;
  }
  if (current.length > 0) out.push(current);
  return out;
}
