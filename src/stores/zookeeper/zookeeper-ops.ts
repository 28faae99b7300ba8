import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { LeaseRecord } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import { encodeZkData } from './zookeeper-data.js';
import { ZK_CODE, type ZkOpResult, type ZkStat, type ZkTransaction } from './zookeeper-driver.js';
import { foreignZnode } from './zookeeper-errors.js';
import type { ResourcePaths } from './zookeeper-paths.js';

/*
 * The `multi` transactions behind each transition (see zookeeper-paths.ts for the znodes). Each is
 * one atomic ZooKeeper transaction: every operation applies, or none. The driver reads a version of
 * 0 as "any version", so no check below relies on version 0: a record znode is written in the
 * transaction that creates it, and its version is 1 or more from then on.
 */

/** What the record znode holds. */
export interface StoredRecord {
  /** The owner; `''` once released. */
  readonly o: string;
  /** The TTL of the last grant or renewal, in ms; 0 once released. */
  readonly t: number;
}

const RELEASED = Buffer.from('{"o":"","t":0}', 'utf8');

/** The last record encoded: a holder renews the same owner and TTL again and again. */
let lastRecord = { owner: '', ttlMs: 0, data: RELEASED };

/** The record znode's data; the buffer may be shared, and is never written to. */
export function encodeRecord(owner: string, ttlMs: number): Buffer {
  if (owner === '') return RELEASED;
  if (lastRecord.owner === owner && lastRecord.ttlMs === ttlMs) return lastRecord.data;
  const data = Buffer.from(`{"o":${JSON.stringify(owner)},"t":${ttlMs}}`, 'utf8');
  lastRecord = { owner, ttlMs, data };
  return data;
}

/** The last owner encoded as a hold znode's data. */
let lastOwner = { owner: '', data: Buffer.alloc(0) };

/** A hold znode's data: its owner. The buffer may be shared, and is never written to. */
export function ownerData(owner: string): Buffer {
  if (lastOwner.owner !== owner) lastOwner = { owner, data: Buffer.from(owner, 'utf8') };
  return lastOwner.data;
}

/** The token znode's data: none (only its version counts). */
const NO_DATA = Buffer.alloc(0);

export function decodeRecord(path: string, data: Buffer): StoredRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const { o, t } = (parsed ?? {}) as Partial<StoredRecord>;
  if (typeof o !== 'string' || typeof t !== 'number') throw foreignZnode(path, 'holds no record');
  return { o, t };
}

/** A znode's `mtime`: the leader's wall-clock time, in ms, of the transaction that last wrote it. */
export function mtimeOf(stat: ZkStat): number {
  // Two 32-bit halves: exact below 2^53 ms, and cheaper than a BigInt.
  return stat.mtime.readInt32BE(0) * 0x1_0000_0000 + stat.mtime.readUInt32BE(4);
}

/** The token a token znode's version stands for; refused, never wrapped, past 2^31 − 1 grants. */
export function tokenOf(path: string, stat: ZkStat): number {
  if (stat.version < 1) {
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `zookeeper znode ${JSON.stringify(path)} has version ${stat.version}: the resource ran out of ` +
        'fencing tokens (ZooKeeper versions are 32-bit) or the znode was not written by leasehold',
      { retryable: false },
    );
  }
  return stat.version;
}

/**
 * The record `get` and `list` report from a record znode and its token znode, with the lease data
 * read from the data znode (`null` or absent: none).
 */
export function recordOf(
  paths: ResourcePaths,
  record: { data: Buffer; stat: ZkStat },
  token: ZkStat,
  data?: LeaseData | null,
): LeaseRecord {
  const { o, t } = decodeRecord(paths.record, record.data);
  return withData(
    {
      resource: paths.resource,
      owner: o,
      token: tokenOf(paths.token, token),
      expiresAt: o === '' ? 0 : mtimeOf(record.stat) + t,
    },
    data,
  );
}

/** Whether a token znode's stat shows a data znode under it: lease data to read. */
export function hasDataOf(token: ZkStat): boolean {
  return token.numChildren > 0;
}

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

/**
 * How the operations of a renew or release were refused, by their offset: the grant is over
 * (`over`: the hold is gone), or the record was written since the version the operations were
 * conditioned on (`changed`: by a grant, a renewal or a release, which a read tells apart).
 */
export function refusalOf(op: number, code: number): 'over' | 'changed' {
  if (op === 0 && code === ZK_CODE.NO_NODE) return 'over';
  return 'changed';
}

/**
 * The token and `expiresAt` a granting transaction answered with, its operations from `first`, the
 * record znode's version it left, and whether the token znode has a data znode to hand over.
 */
export function grantOf(
  p: ResourcePaths,
  results: readonly ZkOpResult[],
  tokenAt: number,
  ttlMs: number,
): { token: number; expiresAt: number; recordVersion: number; hasData: boolean } {
  const token = results[tokenAt]?.stat;
  const record = results[tokenAt + 1]?.stat;
  if (!token || !record) throw foreignZnode(p.record, 'was answered without its stat');
  return {
    token: tokenOf(p.token, token),
    expiresAt: mtimeOf(record) + ttlMs,
    recordVersion: record.version,
    hasData: hasDataOf(token),
  };
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
