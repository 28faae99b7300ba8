import { ErrorCode, LeaseError } from '../../core/errors.js';
import { LIMITS } from '../../core/options.js';
import { invalidRecord, recordOwner } from '../../core/record-check.js';
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

/**
 * The record znode's data, checked (see core/record-check.ts): a JSON object whose `o` is an owner
 * string of at most `LIMITS.ownerMaxBytes` and whose `t` is a whole TTL from 0 to
 * `LIMITS.ttlMaxMs`. Anything else (bytes written by hand or by another program) is
 * `RECORD_INVALID` for `resource`: never read as free.
 */
export function decodeRecord(resource: string, data: Buffer): StoredRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw invalidRecord(resource, `the record znode holds ${data.length} bytes that are no record`);
  const { o, t } = parsed as Record<string, unknown>;
  const owner = recordOwner(resource, o);
  if (typeof t !== 'number' || !Number.isSafeInteger(t) || t < 0 || t > LIMITS.ttlMaxMs)
    throw invalidRecord(resource, `its TTL is ${typeof t === 'number' ? t : typeof t}`);
  return { o: owner, t };
}

/** A znode's `mtime`: the leader's wall-clock time, in ms, of the transaction that last wrote it. */
export function mtimeOf(stat: ZkStat): number {
  // Two 32-bit halves: exact below 2^53 ms, and cheaper than a BigInt.
  return stat.mtime.readInt32BE(0) * 0x1_0000_0000 + stat.mtime.readUInt32BE(4);
}

/**
 * The token a token znode's version stands for; refused, never wrapped, past 2^31 − 1 grants. A
 * token znode at version 0 (created by hand: leasehold creates and counts it in one `multi`) or
 * holding data (leasehold writes none) is `RECORD_INVALID`.
 */
export function tokenOf(p: ResourcePaths, stat: ZkStat): number {
  if (stat.version === 0 || (stat.dataLength ?? 0) > 0) {
    throw invalidRecord(
      p.resource,
      `its token znode is at version ${stat.version} with ${stat.dataLength ?? 0} bytes of data`,
    );
  }
  if (stat.version < 1) {
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `zookeeper znode ${JSON.stringify(p.token)} has version ${stat.version}: the resource ran out of ` +
        'fencing tokens (ZooKeeper versions are 32-bit)',
      { retryable: false },
    );
  }
  return stat.version;
}

/** A record znode without its token znode: made by hand (leasehold creates both in one `multi`). */
export function noTokenZnode(p: ResourcePaths): LeaseError {
  return invalidRecord(p.resource, 'its record znode has no token znode');
}

/**
 * The error of an acquire `multi` refused other than by a conflict, at `op` of the resource's
 * own operations (`acquireOps` when `free`): counting the token of a record that has no token
 * znode (`NO_NODE` at operation 1) is `RECORD_INVALID`, nothing applied; anything else says
 * someone else writes under the store path.
 */
export function refusedAcquire(
  p: ResourcePaths,
  free: boolean,
  op: number,
  code: number,
): LeaseError {
  if (free && op === 1 && code === ZK_CODE.NO_NODE) return noTokenZnode(p);
  return foreignZnode(
    op === 0 && !free ? p.record : p.hold,
    `refused an acquire (operation ${op}, ZooKeeper error ${code})`,
  );
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
  const { o, t } = decodeRecord(paths.resource, record.data);
  return withData(
    {
      resource: paths.resource,
      owner: o,
      token: tokenOf(paths, token),
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
    token: tokenOf(p, token),
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
