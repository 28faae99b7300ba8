import type { LeaseRecord } from '../core/lease.js';
import type { LeaseStore } from '../core/store.js';
import type { Clock } from '../core/time.js';

/** Waits for every promise to settle, or for `ms` to pass, whichever is first. */
export async function settleWithin(
  promises: readonly (Promise<unknown> | undefined)[],
  ms: number,
  clock: Clock,
): Promise<void> {
  const pending = promises.filter((p): p is Promise<unknown> => p !== undefined);
  if (pending.length === 0) return;
  let timer: { clear(): void } | undefined;
  await Promise.race([
    Promise.allSettled(pending),
    new Promise<void>((resolve) => {
      timer = clock.setTimeout(resolve, ms);
    }),
  ]);
  timer?.clear();
}

export { commonPrefix } from '../core/store-defaults.js';

/** Records a fleet asks for per `list` call (membership reads, the search for free records). */
export const PAGE_SIZE = 5000;

/** Every record under `prefix`, page by page (no cap on how many). */
export async function listAll(
  store: LeaseStore,
  prefix: string,
  pageSize: number,
): Promise<LeaseRecord[]> {
  const records: LeaseRecord[] = [];
  let after = '';
  for (;;) {
    const page = await store.list({ prefix, limit: pageSize, after });
    records.push(...page);
    if (page.length < pageSize) return records;
    after = page.at(-1)!.resource;
  }
}

/** Shuffles in place (Fisher–Yates) and returns the array. */
export function shuffle<T>(items: T[], random: () => number = Math.random): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
