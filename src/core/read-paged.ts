import type { LeaseRecord } from './lease.js';
import { yieldToLoop } from './time.js';

/**
 * Up to `limit` records in resource order, read a page at a time: each page starts past the last
 * record of the one before, and the event loop runs between pages (design rule 6: decoding one
 * page never holds it long). `pageSize(left, read)` says how many to ask for next, from how many
 * are still wanted and the records read so far. Each page is its own read, so a record that
 * changes while a long list is read shows either its old or its new state, as it would across two
 * `list` calls paging with `after`.
 */
export async function readPaged(
  limit: number,
  after: string,
  readPage: (after: string, limit: number) => Promise<LeaseRecord[]>,
  pageSize: (left: number, read: readonly LeaseRecord[]) => number,
): Promise<LeaseRecord[]> {
  const records: LeaseRecord[] = [];
  for (let from = after; ;) {
    const want = Math.min(limit - records.length, pageSize(limit - records.length, records));
    const page = await readPage(from, want);
    for (const record of page) records.push(record);
    if (page.length < want || records.length >= limit) return records;
    from = page.at(-1)!.resource;
    await yieldToLoop();
  }
}
