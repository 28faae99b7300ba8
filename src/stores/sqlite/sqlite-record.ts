import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord } from '../../core/lease.js';
import {
  invalidRecord,
  recordExpiresAt,
  recordOwner,
  recordToken,
} from '../../core/record-check.js';
import { withData, type LeaseData } from '../../core/lease-data.js';

/*
 * The record codec: a row of the lease table as a record or a lease, and the checks that refuse
 * a row leasehold did not write.
 *
 * Lease data as SQLite keeps it in the `data` column (declared BLOB, so every value is stored as
 * bound): a string as TEXT, bytes as a BLOB, none as NULL. Both types round-trip exactly, U+0000
 * included, with no encoding step, so the statements bind the value itself.
 */

/**
 * The column's value as lease data: TEXT is a string, a BLOB is bytes (copied out of the driver's
 * buffer), NULL (a record written before lease data existed, or cleared) is none. Any other type
 * was written by something else: a corrupt record, `STORE_UNAVAILABLE`, not retryable.
 */
export function fromColumn(value: unknown, resource: string): LeaseData | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return new Uint8Array(value);
  throw new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `the lease data of ${JSON.stringify(resource)} is a SQLite ${typeof value}, not text or a blob: the record was written by something else`,
    { retryable: false, resource },
  );
}

/** A row of `get` / `list`, as read: any column may hold any SQLite type. */
export interface RecordRow {
  resource: string;
  owner: unknown;
  token: unknown;
  expiresAt: unknown;
  data: unknown;
}

/**
 * A row of `get` / `list` (the record's columns plus `data`) as a record, `data` absent when none.
 * A record leasehold did not write (a token that is no positive safe integer, an owner that is no
 * string or too long, an `expiresAt` that is no whole number of ms) is `RECORD_INVALID`.
 */
export function toRecord(row: RecordRow): LeaseRecord {
  const { resource } = row;
  const owner = recordOwner(resource, row.owner);
  const token = recordToken(resource, row.token);
  const expiresAt = recordExpiresAt(resource, row.expiresAt);
  return withData({ resource, owner, token, expiresAt }, fromColumn(row.data, resource));
}

/**
 * The error for the row of `resource` that an acquire refused to take (see
 * `statements().acquire`), as `row` reads now: `RECORD_INVALID` saying what is wrong with it;
 * when every field reads as valid, `STORE_UNAVAILABLE` (not retryable) if its token is 2^53 − 1
 * already, as no higher one exists, else `RECORD_INVALID` (a field SQLite keeps in another type
 * than leasehold writes, or a row repaired since).
 */
export function refusedRecord(resource: string, row: RecordRow | undefined): LeaseError {
  try {
    if (row) toRecord(row);
  } catch (error) {
    return error as LeaseError;
  }
  if (row?.token === Number.MAX_SAFE_INTEGER)
    return new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `SQLite cannot grant ${JSON.stringify(resource)}: its token is ${row.token}, and the next, ${2n ** 53n}, would be past 2^53 − 1`,
      { retryable: false, resource },
    );
  return invalidRecord(resource, 'a field is not stored as leasehold stores it');
}

/** What the acquire statement returns for a grant: the record's data comes back with it. */
export interface GrantRow {
  token: number;
  expiresAt: number;
  data: unknown;
}

/** The lease a grant wrote, with the data the record already held (what earlier holders left). */
export function granted(resource: string, owner: string, ttlMs: number, row: GrantRow): Lease {
  const { token, expiresAt } = row;
  return withData({ resource, owner, token, expiresAt, ttlMs }, fromColumn(row.data, resource));
}
