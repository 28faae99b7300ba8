import { decodeDataBytes, encodeDataBytes, type LeaseData } from '../../core/lease-data.js';
import { foreignZnode } from './zookeeper-errors.js';

/*
 * Lease data as the data of a data znode (see zookeeper-paths.ts), in core's binary form: a type
 * byte, then the value in ZooKeeper's own bytes.
 */

/** The data a data znode holds for `data` (never `null`: no data is no znode). */
export const encodeZkData: (data: LeaseData) => Buffer = encodeDataBytes;

/** The lease data a data znode's data stands for; data in no known form is a foreign znode. */
export function decodeZkData(data: Buffer, path: string): LeaseData {
  const value = decodeDataBytes(data);
  if (value !== undefined) return value;
  throw foreignZnode(path, "holds no lease data in leasehold's form");
}
