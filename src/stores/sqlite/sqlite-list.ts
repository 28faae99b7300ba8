import type { LeaseRecord } from '../../core/lease.js';
import { readPaged } from '../../core/read-paged.js';
import { dataSize } from '../../core/reply-sizer.js';

/**
 * Records per read of a long `list`, at most. Measured on a loaded 2-core machine, reading and
 * decoding 1,000 records takes about 1 ms (2,000 about 4.5 ms, with outliers near 10 ms from GC).
 */
export const LIST_ROWS = 1000;

/**
 * Records of the first read, before the size of the records is known: with lease data, a record
 * can be kilobytes, and 1,000 of 4 KiB of non-ASCII text took 60–140 ms to read (bytes 40–90 ms).
 */
export const LIST_FIRST_ROWS = 64;

/**
 * About how much a read may decode (string lengths counted twice, bytes once): the next read takes
 * as many records as fit, by the average size of those read so far, from `LIST_FIRST_ROWS` up to
 * `LIST_ROWS`. 64 records of 4 KiB text read in 3–6 ms on the same machine.
 */
export const LIST_PAGE_BYTES = 256 * 1024;

/** Roughly what decoding `record` costs, in bytes. */
function sizeOf(record: LeaseRecord): number {
  return 2 * (record.resource.length + record.owner.length) + 16 + dataSize(record.data);
}

/**
 * Up to `limit` records in resource order, a page at a time (see core `readPaged`), pages sized by
 * the records already read (see `LIST_PAGE_BYTES`).
 */
export function readSizedPages(
  limit: number,
  after: string,
  readPage: (after: string, limit: number) => Promise<LeaseRecord[]>,
): Promise<LeaseRecord[]> {
  let size = 0;
  let counted = 0;
  return readPaged(limit, after, readPage, (_left, read) => {
    for (; counted < read.length; counted++) size += sizeOf(read[counted]!);
    if (read.length === 0) return LIST_FIRST_ROWS;
    const fit = Math.floor(LIST_PAGE_BYTES / (size / read.length));
    return Math.max(LIST_FIRST_ROWS, Math.min(LIST_ROWS, fit));
  });
}
