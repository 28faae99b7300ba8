import type { LeaseRecord } from '../../core/lease.js';
import { compareResources, prefixEnd } from '../../core/store.js';
import type { RedisCalls } from './redis-calls.js';
import { runScript, type RedisClient } from './redis-driver.js';
import type { RedisKeys } from './redis-keys.js';
import { LIST } from './redis-ops.js';
import { listed } from './redis-record.js';

/** ZRANGEBYLEX bounds of the names that start with `prefix` and sort after `after` ('' = from the start). */
export interface LexRange {
  readonly min: string;
  readonly max: string;
}

/** The index range `list` reads on every shard; `undefined` when `after` is past every name under `prefix`. */
export function listRange(prefix: string, after: string): LexRange | undefined {
  const end = prefixEnd(prefix);
  if (after !== '' && end !== undefined && compareResources(after, end) >= 0) return undefined;
  const max = end === undefined ? '+' : `(${end}`;
  if (after !== '' && compareResources(after, prefix) >= 0) return { min: `(${after}`, max };
  return { min: prefix === '' ? '-' : `[${prefix}`, max };
}

/** Where a merge stands in one shard's page. */
interface Cursor {
  readonly page: readonly LeaseRecord[];
  at: number;
}

/**
 * The first `limit` records of shard pages that are each in resource order (a resource lives in
 * one shard only, so there are no ties): a k-way merge on a heap, about `limit × log2(shards)`
 * comparisons instead of sorting every page, so a 16-shard list does not hold the event loop.
 */
export function mergePages(
  pages: readonly (readonly LeaseRecord[])[],
  limit: number,
): LeaseRecord[] {
  const heap: Cursor[] = pages.filter((page) => page.length > 0).map((page) => ({ page, at: 0 }));
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftDown(heap, i);
  const out: LeaseRecord[] = [];
  while (out.length < limit && heap.length > 0) {
    const top = heap[0]!;
    out.push(top.page[top.at++]!);
    if (top.at === top.page.length) {
      const last = heap.pop()!;
      if (heap.length === 0) break;
      heap[0] = last;
    }
    siftDown(heap, 0);
  }
  return out;
}

function head(cursor: Cursor): string {
  return cursor.page[cursor.at]!.resource;
}

function siftDown(heap: Cursor[], start: number): void {
  let i = start;
  for (;;) {
    let least = i;
    for (const child of [2 * i + 1, 2 * i + 2]) {
      if (child < heap.length && compareResources(head(heap[child]!), head(heap[least]!)) < 0)
        least = child;
    }
    if (least === i) return;
    [heap[i], heap[least]] = [heap[least]!, heap[i]!];
    i = least;
  }
}

/**
 * `list`: one script per shard reads up to `limit` names past `after` in byte order with their
 * records; the shards' pages are merged in order here and cut to `limit`.
 */
export async function listRecords(
  calls: RedisCalls,
  client: RedisClient,
  keys: RedisKeys,
  query: { readonly prefix: string; readonly limit: number; readonly after: string },
): Promise<LeaseRecord[]> {
  const range = listRange(query.prefix, query.after);
  if (range === undefined) return [];
  const { min, max } = range;
  const { limit } = query;
  const shards = Array.from({ length: keys.shards }, (_, shard) => shard);
  const replies = await calls.call('list', () =>
    Promise.all(
      shards.map((shard) =>
        runScript(client, LIST, [keys.index(shard)], [min, max, limit, keys.recordPrefix(shard)]),
      ),
    ),
  );
  const pages = (replies as (string | null)[][]).map(listed);
  return pages.length === 1 ? pages[0]! : mergePages(pages, limit);
}
