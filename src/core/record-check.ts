import { ErrorCode, LeaseError } from './errors.js';
import { LIMITS } from './options.js';

/**
 * `RECORD_INVALID` for the record of `resource`: `problem` says what is wrong with it, as found
 * (`token is -3`, `owner is missing`). The message tells where such a record comes from.
 */
export function invalidRecord(resource: string, problem: string, cause?: unknown): LeaseError {
  return new LeaseError(
    ErrorCode.RECORD_INVALID,
    `the lease record of ${JSON.stringify(resource)} is not one leasehold writes (${problem}): it was written by hand or by another program; it is never treated as free — delete or repair it`,
    { resource, retryable: false, cause },
  );
}

/** A value for a message: short, and never more than 60 characters of it. */
function shown(value: unknown): string {
  if (typeof value === 'string')
    return value.length > 60 ? `a string of ${value.length} characters` : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value);
  return value === null ? 'null' : value === undefined ? 'missing' : typeof value;
}

/**
 * A token read from a store, checked: a positive safe integer (strings of digits are read
 * exactly; anything above 2^53 − 1 is refused, never rounded or wrapped). `RECORD_INVALID` else.
 */
export function recordToken(resource: string, value: unknown): number {
  let token: number;
  if (typeof value === 'number') token = value;
  else if (typeof value === 'bigint') token = Number(value);
  else if (typeof value === 'string' && /^[0-9]{1,20}$/.test(value)) token = Number(value);
  else throw invalidRecord(resource, `token is ${shown(value)}`);
  if (
    !Number.isSafeInteger(token) ||
    token < 1 ||
    (typeof value === 'bigint' && BigInt(token) !== value)
  )
    throw invalidRecord(resource, `token is ${shown(value)}, not a positive safe integer`);
  return token;
}

/** An owner read from a store, checked: a string of at most `LIMITS.ownerMaxBytes` (`''` when released). */
export function recordOwner(resource: string, value: unknown): string {
  if (typeof value !== 'string') throw invalidRecord(resource, `owner is ${shown(value)}`);
  if (Buffer.byteLength(value) > LIMITS.ownerMaxBytes)
    throw invalidRecord(
      resource,
      `owner is ${Buffer.byteLength(value)} bytes, over ${LIMITS.ownerMaxBytes}`,
    );
  return value;
}

/** An `expiresAt` read from a store, checked: a finite, non-negative number of ms (0 when released). */
export function recordExpiresAt(resource: string, value: unknown): number {
  const ms =
    typeof value === 'number'
      ? value
      : typeof value === 'bigint' || (typeof value === 'string' && /^[0-9]{1,20}$/.test(value))
        ? Number(value)
        : NaN;
  if (!Number.isSafeInteger(ms) || ms < 0)
    throw invalidRecord(resource, `expiresAt is ${shown(value)}`);
  return ms;
}
