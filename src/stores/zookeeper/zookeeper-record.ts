import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { LeaseRecord } from '../../core/lease.js';
import {
  decodeDataBytes,
  encodeDataBytes,
  withData,
  type LeaseData,
} from '../../core/lease-data.js';
import { LIMITS } from '../../core/options.js';
import { invalidRecord, recordOwner } from '../../core/record-check.js';
import type { ZkOpResult, ZkStat } from './zookeeper-driver.js';
import { foreignZnode } from './zookeeper-errors.js';
import type { ResourcePaths } from './zookeeper-paths.js';

/*
 * The record codec: what the record, hold, token and data znodes hold (see zookeeper-paths.ts for
 * the znodes), how their data and stats read as a record, and the checks that refuse a znode
 * leasehold did not write.
 *
 * Lease data is the data of a data znode, in core's binary form: a type byte, then the value in
 * ZooKeeper's own bytes.
 */

/** The data a data znode holds for `data` (never `null`: no data is no znode). */
export const encodeZkData: (data: LeaseData) => Buffer = encodeDataBytes;

/** The lease data a data znode's data stands for; data in no known form is a foreign znode. */
export function decodeZkData(data: Buffer, path: string): LeaseData {
  const value = decodeDataBytes(data);
  if (value !== undefined) return value;
  throw foreignZnode(path, "holds no lease data in leasehold's form");
}

/** What the record znode holds. */
export interface StoredRecord {
  /** The owner; `''` once released. */
  readonly o: string;
  /** The TTL of the last grant or renewal, in ms; 0 once released. */
  readonly t: number;
}

/** The record znode's data once released. */
export const RELEASED = Buffer.from('{"o":"","t":0}', 'utf8');

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
