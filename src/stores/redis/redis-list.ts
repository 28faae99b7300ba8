import type { LeaseRecord } from '../../core/lease.js';
import { compareResources, prefixEnd } from '../../core/store.js';

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
