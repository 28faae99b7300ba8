import { ErrorCode, LeaseError } from '../../core/errors.js';
import { decodeDataBytes, encodeDataBytes, type LeaseData } from '../../core/lease-data.js';

/*
 * Lease data as the value of a data key (see etcd-keys.ts), in core's binary form: a type byte,
 * then the value in etcd's own bytes.
 */

/** The value a data key holds for `data` (never `null`: no data is no key). */
export const encodeEtcdData: (data: LeaseData) => Buffer = encodeDataBytes;

/** The lease data a data key's value stands for; a value in no known form is a foreign key. */
export function decodeEtcdData(value: Buffer, key: Buffer): LeaseData {
  const data = decodeDataBytes(value);
  if (data !== undefined) return data;
  throw new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `etcd key ${JSON.stringify(key.toString('utf8'))} holds no lease data in leasehold's form: is the key prefix used by something else?`,
    { retryable: false },
  );
}
