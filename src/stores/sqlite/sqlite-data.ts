import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { LeaseRecord } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';

/*
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

/** A row of `get` / `list` (the record's columns plus `data`) as a record, `data` absent when none. */
export function toRecord(row: LeaseRecord & { data: unknown }): LeaseRecord {
  const { resource, owner, token, expiresAt } = row;
  return withData({ resource, owner, token, expiresAt }, fromColumn(row.data, resource));
}
