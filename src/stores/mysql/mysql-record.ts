import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord } from '../../core/lease.js';
import { decodeData, encodeData, withData, type LeaseData } from '../../core/lease-data.js';
import { recordExpiresAt, recordOwner, recordToken } from '../../core/record-check.js';
import type { AcquireOutcome } from '../../core/store.js';

/*
 * The record codec: rows of the lease table as records and leases, lease data and names as the
 * columns keep them (UTF-8 bytes), and the checks that refuse a row leasehold did not write.
 */

/** A row of the lease table as `get`, `list` and the refusals read it. */
export interface Row {
  resource: unknown;
  owner: unknown;
  token: unknown;
  expires_at: unknown;
  data?: unknown;
}

/**
 * A row of the lease table as a record. One leasehold did not write (a token that is no positive
 * safe integer, a negative or huge expiry, an owner whose text is over `LIMITS.ownerMaxBytes`) is
 * `RECORD_INVALID`.
 */
export function toRecord(row: Row): LeaseRecord {
  const resource = text(row.resource);
  return withData(
    {
      resource,
      owner: recordOwner(resource, text(row.owner)),
      token: recordToken(resource, row.token),
      expiresAt: recordExpiresAt(resource, row.expires_at),
    },
    dataOf(row.data, resource),
  );
}

/** The `data` column as lease data: `NULL` (and a record from before lease data) is none. */
export function dataOf(value: unknown, resource: string): LeaseData | null {
  if (value === null || value === undefined) return null;
  return decodeData(text(value), resource);
}

/** Lease data as the `data` column keeps it: `encodeData`'s form in UTF-8 bytes, or `NULL`. */
export function stored(data: LeaseData | null): Buffer | null {
  const encoded = encodeData(data);
  return encoded === null ? null : bytes(encoded);
}

/** A row of a grant script's answer. */
export interface GrantRow {
  i?: unknown;
  p?: unknown;
  token: unknown;
  expires_at: unknown;
  data: unknown;
}

/** The lease a grant script's row stands for, with the data the record held. */
export function granted(resource: string, owner: string, row: GrantRow, ttlMs: number): Lease {
  return withData(
    {
      resource,
      owner,
      token: int(row.token, 'token'),
      expiresAt: int(row.expires_at, 'expires_at'),
      ttlMs,
    },
    dataOf(row.data, resource),
  );
}

/**
 * One answer row of `acquireBatch` for `resource`: a grant of this transaction (marked by a
 * negative `expires_at`, see mysql-ops.ts), else the live holder that refused it.
 */
export function batchOutcome(
  resource: string,
  owner: string,
  ttlMs: number,
  row: Omit<Row, 'resource'>,
): AcquireOutcome {
  // A record that was so already failed the batch.
  const mark = int(row.expires_at, 'expires_at');
  if (mark >= 0)
    return { resource, lease: null, holder: toRecord({ ...row, resource, data: null }) };
  const token = recordToken(resource, row.token);
  const lease = { resource, owner, token, expiresAt: -mark, ttlMs };
  return { resource, lease: withData(lease, dataOf(row.data, resource)) };
}

/** A BIGINT from the server as a number; mysql2 gives a string once it exceeds 2^53. */
export function int(value: unknown, what: string): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(n)) {
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `the server returned ${String(value)} as ${what}, not a safe integer`,
      { retryable: false },
    );
  }
  return n;
}

/** A name or an encoded value as the columns keep it: UTF-8 bytes. */
export function bytes(text: string): Buffer {
  return Buffer.from(text, 'utf8');
}

/** A column's bytes (or a string) as text. */
export function text(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}
