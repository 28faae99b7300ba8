import { ErrorCode, LeaseError } from '../../core/errors.js';
import { decodeDataBytes, encodeDataBytes, type LeaseData } from '../../core/lease-data.js';

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
