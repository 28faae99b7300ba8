import type { StoreOpenOptions, StoreUrl } from '../../core/store-url.js';
import { SqliteStore } from './sqlite-store.js';
import { parseSqliteUrl } from './sqlite-url.js';

/**
 * `sqlite:PATH`, `sqlite::memory:`, `sqlite:///abs/path`, with
 * `?table=&busyTimeoutMs=&maxClockSkewMs=&synchronous=&watchPollMs=`. Takes `clock` from
 * `options`; the table is created on first use.
 */
export async function openSqlite(
  url: StoreUrl,
  options: StoreOpenOptions = {},
): Promise<SqliteStore> {
  const { path, options: store } = parseSqliteUrl(url);
  return SqliteStore.open(path, options.clock ? { ...store, clock: options.clock } : store);
}
