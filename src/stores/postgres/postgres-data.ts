import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { LeaseData } from '../../core/lease-data.js';

/** The first byte of a stored value: what follows is a string's UTF-8 (`s`) or the bytes (`b`). */
const TEXT = 0x73;
const BYTES = 0x62;

/**
 * Lease data as the `data` column (bytea) keeps it: `s` + the string's UTF-8, or `b` + the bytes;
 * `null` for none. The letters of `encodeData`, without base64 (a bytea holds bytes), and bytea
 * rather than text, which cannot hold U+0000. node-postgres sends a Buffer as a binary parameter.
 */
export function toBytea(data: LeaseData | null): Buffer | null {
  if (data === null) return null;
  if (typeof data === 'string') {
    const text = Buffer.allocUnsafe(1 + Buffer.byteLength(data, 'utf8'));
    text[0] = TEXT;
    text.write(data, 1, 'utf8');
    return text;
  }
  const bytes = Buffer.allocUnsafe(1 + data.byteLength);
  bytes[0] = BYTES;
  bytes.set(data, 1);
  return bytes;
}

/**
 * The value `toBytea` wrote; `null` for none (a record written before lease data existed has no
 * row in the data table). Anything else was written by something other than leasehold: a corrupt
 * record, `STORE_UNAVAILABLE`, not retryable.
 */
export function fromBytea(value: unknown, resource: string): LeaseData | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Uint8Array && value.byteLength > 0) {
    const buffer = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    if (buffer[0] === TEXT) return buffer.toString('utf8', 1);
    if (buffer[0] === BYTES) return new Uint8Array(buffer.subarray(1));
  }
  const start = value instanceof Uint8Array ? `byte ${value[0] ?? 'none'}` : typeof value;
  throw new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `the lease data of ${JSON.stringify(resource)} is not in leasehold's form (it starts with ${start}): the record was written by something else`,
    { retryable: false, resource },
  );
}
