import { ErrorCode, invalidArgument, LeaseError } from './errors.js';
import type { LeaseData } from './lease.js';
import { describe, LIMITS } from './options.js';

export type { LeaseData };

/** The UTF-8 size of `data`, in bytes. */
export function dataBytes(data: LeaseData): number {
  return typeof data === 'string' ? Buffer.byteLength(data, 'utf8') : data.byteLength;
}

/**
 * Checks a value to write as lease data: a string (well-formed UTF-16) or bytes (`Uint8Array`,
 * `Buffer`), at most `LIMITS.dataMaxBytes`; `null` clears it. Returns the value (bytes copied, so
 * a caller changing its buffer later changes nothing written).
 */
export function checkData(value: unknown, field = 'data'): LeaseData | null {
  if (value === null) return null;
  if (typeof value === 'string') {
    if (!value.isWellFormed())
      throw invalidArgument(field, 'must be well-formed UTF-16 (it has a lone surrogate)');
  } else if (!(value instanceof Uint8Array)) {
    throw invalidArgument(
      field,
      `must be a string, a Uint8Array (or Buffer) or null, got ${describe(value)}`,
    );
  }
  const bytes = dataBytes(value);
  if (bytes > LIMITS.dataMaxBytes)
    throw invalidArgument(
      field,
      `is ${bytes} bytes, over the limit of ${LIMITS.dataMaxBytes} bytes (LIMITS.dataMaxBytes)`,
    );
  return typeof value === 'string' ? value : new Uint8Array(value);
}

/**
 * Lease data as one string for stores that keep text: `s` + the string, or `b` + base64 of the
 * bytes; `null` for none. Every store keeps this form, so a value reads back as the type written.
 */
export function encodeData(data: LeaseData | null): string | null {
  if (data === null) return null;
  return typeof data === 'string' ? `s${data}` : `b${Buffer.from(data).toString('base64')}`;
}

/**
 * The value `encodeData` wrote; `null` for none (a record written before lease data existed reads
 * so). A text in no known form is a corrupt record: `STORE_UNAVAILABLE`, not retryable.
 */
export function decodeData(text: string | null | undefined, resource: string): LeaseData | null {
  if (text === null || text === undefined || text === '') return null;
  if (text[0] === 's') return text.slice(1);
  if (text[0] === 'b') return new Uint8Array(Buffer.from(text.slice(1), 'base64'));
  throw new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `the lease data of ${JSON.stringify(resource)} is not in leasehold's form (it starts with ${JSON.stringify(text.slice(0, 1))}): the record was written by something else`,
    { retryable: false, resource },
  );
}

/** Whether two data values are the same (same type, same content). */
export function sameData(a: LeaseData | null, b: LeaseData | null): boolean {
  if (a === null || b === null) return a === b;
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return a.byteLength === b.byteLength && Buffer.from(a).equals(Buffer.from(b));
}

/**
 * `record` with `data` set, the key left out when there is none: a record without data reads as
 * it did before lease data existed.
 */
export function withData<T extends object>(record: T, data: LeaseData | null | undefined): T {
  const { data: _drop, ...rest } = record as T & { data?: unknown };
  void _drop;
  return (data === null || data === undefined ? rest : { ...rest, data }) as T;
}

/** The first byte of lease data in the binary form: what follows is a string's UTF-8. */
const TEXT_MARK = 0x73; // 's'
/** The first byte of lease data in the binary form: what follows is the bytes themselves. */
const BYTES_MARK = 0x62; // 'b'

/**
 * Lease data as bytes, for stores that keep bytes (an etcd value, a znode's data, a `bytea`): one
 * byte for the type (`s` or `b`, the letters of `encodeData`), then a string's UTF-8 or the bytes
 * themselves, so bytes cost no base64 and read back as bytes, strings as strings.
 */
export function encodeDataBytes(data: LeaseData): Buffer {
  const text = typeof data === 'string';
  const out = Buffer.allocUnsafe(1 + (text ? Buffer.byteLength(data, 'utf8') : data.byteLength));
  out[0] = text ? TEXT_MARK : BYTES_MARK;
  if (text) out.write(data, 1, 'utf8');
  else out.set(data, 1);
  return out;
}

/**
 * The value `encodeDataBytes` wrote, or `undefined` for bytes in no known form (the caller says
 * which key, znode or row was written by something else).
 */
export function decodeDataBytes(bytes: Uint8Array): LeaseData | undefined {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer[0] === TEXT_MARK) return buffer.toString('utf8', 1);
  if (buffer[0] === BYTES_MARK) return new Uint8Array(buffer.subarray(1));
  return undefined;
}
