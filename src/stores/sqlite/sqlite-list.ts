import type { LeaseRecord } from '../../core/lease.js';
import { yieldToLoop } from './sqlite-turns.js';

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
  const { data } = record;
  const dataSize = data == null ? 0 : typeof data === 'string' ? 2 * data.length : data.byteLength;
  return 2 * (record.resource.length + record.owner.length) + 16 + dataSize;
}

/**
 * Up to `limit` records in resource order, read a page at a time: each page starts past the last
 * record of the one before, and the event loop runs between pages. Pages are sized by the records
 * already read (see `LIST_PAGE_BYTES`). Each page is its own read, so a record that changes while a
 * long list is read shows either its old or its new state, as it would across two `list` calls
 * paging with `after`.
 */
export async function readPaged(
  limit: number,
  after: string,
  readPage: (after: string, limit: number) => Promise<LeaseRecord[]>,
): Promise<LeaseRecord[]> {
  const records: LeaseRecord[] = [];
  let size = 0;
  for (let from = after; ;) {
    const fit =
      records.length === 0
        ? LIST_FIRST_ROWS
        : Math.floor(LIST_PAGE_BYTES / (size / records.length));
    const rows = Math.max(LIST_FIRST_ROWS, Math.min(LIST_ROWS, fit));
    const want = Math.min(limit - records.length, rows);
    const page = await readPage(from, want);
    for (const record of page) {
      records.push(record);
      size += sizeOf(record);
    }
    if (page.length < want || records.length >= limit) return records;
    from = page.at(-1)!.resource;
    await yieldToLoop();
  }
}
