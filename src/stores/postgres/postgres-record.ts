import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord } from '../../core/lease.js';
import {
  decodeDataBytes,
  encodeDataBytes,
  withData,
  type LeaseData,
} from '../../core/lease-data.js';
import { recordExpiresAt, recordOwner, recordToken } from '../../core/record-check.js';
import type { PgQueryResult } from './postgres-driver.js';

/*
 * The record codec: rows of the lease table as records and leases, lease data as the `data`
 * column keeps it, and the checks that refuse a row leasehold did not write.
 */

/** A row a statement answered, its columns as node-postgres gives them. */
export type Row = PgQueryResult['rows'][number];

/**
 * Lease data as the `data` column (bytea) keeps it: core's binary form (`s` + the string's UTF-8,
 * or `b` + the bytes); `null` for none. bytea rather than text, which cannot hold U+0000.
 * node-postgres sends a Buffer as a binary parameter.
 */
export function toBytea(data: LeaseData | null): Buffer | null {
  return data === null ? null : encodeDataBytes(data);
}

/**
 * The value `toBytea` wrote; `null` for none (a record written before lease data existed has no
 * row in the data table). Anything else was written by something other than leasehold: a corrupt
 * record, `STORE_UNAVAILABLE`, not retryable.
 */
export function fromBytea(value: unknown, resource: string): LeaseData | null {
  if (value === null || value === undefined) return null;
  const data = value instanceof Uint8Array ? decodeDataBytes(value) : undefined;
  if (data !== undefined) return data;
  const start = value instanceof Uint8Array ? `byte ${value[0] ?? 'none'}` : typeof value;
  throw new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `the lease data of ${JSON.stringify(resource)} is not in leasehold's form (it starts with ${start}): the record was written by something else`,
    { retryable: false, resource },
  );
}

/**
 * A row of the lease table as a record. One leasehold did not write (a token that is no positive
 * safe integer, an owner over `LIMITS.ownerMaxBytes`, a negative expiry) is `RECORD_INVALID`.
 */
export function toRecord(row: Row): LeaseRecord {
  const resource = String(row.resource);
  const record = {
    resource,
    owner: recordOwner(resource, row.owner),
    token: recordToken(resource, row.token),
    expiresAt: recordExpiresAt(resource, row.expires_at),
  };
  return withData(record, fromBytea(row.data, resource));
}

/** The lease a grant wrote, with the data the record held (what earlier holders left). */
export function granted(resource: string, owner: string, ttlMs: number, row: Row): Lease {
  const token = safeInteger(row.token, 'token');
  const expiresAt = safeInteger(row.expires_at, 'expires_at');
  return withData({ resource, owner, token, expiresAt, ttlMs }, fromBytea(row.data, resource));
}

/** `lease` moved to `expiresAt` by a renewal of `ttlMs`. */
export function renewed(lease: Lease, expiresAt: number, ttlMs: number): Lease {
  return { resource: lease.resource, owner: lease.owner, token: lease.token, expiresAt, ttlMs };
}

/** node-postgres returns bigint columns as strings; anything beyond 2^53 − 1 is refused, not rounded. */
export function safeInteger(value: unknown, column: string): number {
  const n = typeof value === 'string' || typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) {
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `column ${column} holds ${String(value)}, which is not a safe integer`,
      { retryable: false },
    );
  }
  return n;
}

/** The size of a bytea column's value as the driver returned it (a Buffer, or null). */
export function byteLength(value: unknown): number {
  return value instanceof Uint8Array ? value.byteLength : 0;
}
