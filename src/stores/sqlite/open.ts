import type { StoreUrl } from '../../core/store-url.js';
import type { Clock } from '../../core/time.js';
import { SqliteStore } from './sqlite-store.js';
import { parseSqliteUrl } from './sqlite-url.js';

/** `sqlite:PATH`, `sqlite::memory:`, `sqlite:///abs/path`, with `?table=&busyTimeoutMs=&maxClockSkewMs=&synchronous=&watchPollMs=`. */
export async function openSqlite(
  url: StoreUrl,
  given: { clock?: Clock } = {},
): Promise<SqliteStore> {
  const { path, options } = parseSqliteUrl(url);
  return SqliteStore.open(path, given.clock ? { ...options, clock: given.clock } : options);
}
