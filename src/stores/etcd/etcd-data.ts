import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { LeaseData } from '../../core/lease-data.js';

/*
 * Lease data as the value of a data key (see etcd-keys.ts): one byte for the type, then the value
 * in etcd's own bytes, so bytes cost no base64 and read back as bytes, strings as strings.
 */

/** The first byte of a data key's value: the value is UTF-8 text. */
const TEXT = 0x73; // 's'
/** The first byte of a data key's value: the value is the bytes that follow. */
const BYTES = 0x62; // 'b'

/** The value a data key holds for `data` (never `null`: no data is no key). */
export function encodeEtcdData(data: LeaseData): Buffer {
  if (typeof data === 'string') {
    const out = Buffer.allocUnsafe(1 + Buffer.byteLength(data, 'utf8'));
    out[0] = TEXT;
    out.write(data, 1, 'utf8');
    return out;
  }
  const out = Buffer.allocUnsafe(1 + data.byteLength);
  out[0] = BYTES;
  out.set(data, 1);
  return out;
}

/** The lease data a data key's value stands for; a value in no known form is a foreign key. */
export function decodeEtcdData(value: Buffer, key: Buffer): LeaseData {
  if (value[0] === TEXT) return value.toString('utf8', 1);
  if (value[0] === BYTES) return new Uint8Array(value.subarray(1));
  throw new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `etcd key ${JSON.stringify(key.toString('utf8'))} holds no lease data in leasehold's form: is the key prefix used by something else?`,
    { retryable: false },
  );
}
