import type { LeaseData } from '../../core/lease-data.js';
import { foreignZnode } from './zookeeper-errors.js';

/*
 * Lease data as the data of a data znode (see zookeeper-paths.ts): one byte for the type, then
 * the value in ZooKeeper's own bytes, so bytes cost no base64 and read back as bytes, strings as
 * strings.
 */

/** The first byte of a data znode's data: the value is UTF-8 text. */
const TEXT = 0x73; // 's'
/** The first byte of a data znode's data: the value is the bytes that follow. */
const BYTES = 0x62; // 'b'

/** The data a data znode holds for `data` (never `null`: no data is no znode). */
export function encodeZkData(data: LeaseData): Buffer {
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

/** The lease data a data znode's data stands for; data in no known form is a foreign znode. */
export function decodeZkData(data: Buffer, path: string): LeaseData {
  if (data[0] === TEXT) return data.toString('utf8', 1);
  if (data[0] === BYTES) return new Uint8Array(data.subarray(1));
  throw foreignZnode(path, "holds no lease data in leasehold's form");
}
