import type { Command } from 'commander';
import { parseStoreUrl, type StoreUrl } from '../core/store-url.js';
import { DEFAULT_STORE_URL, type LeaseStore } from '../index.js';
import { defaultStoreUrl } from '../stores/open-store.js';
import { parseSqliteUrl } from '../stores/sqlite/sqlite-url.js';
import { openQuietly } from './open-quietly.js';
import { CliFailure } from './output.js';

export interface StoreOptions {
  store?: string;
  json?: boolean;
}

/** Adds the options every command shares: `--store URL` and `--json`. */
export function withCommonOptions(command: Command): Command {
  return command
    .option(
      '--store <url>',
      `store URL (default: $LEASEHOLD_STORE, else ${DEFAULT_STORE_URL}); see "leasehold --help" for schemes`,
    )
    .option('--json', 'machine-readable JSON output');
}

/**
 * The URL a command will open: `--store`, else `LEASEHOLD_STORE`, else the default, as
 * `openStore()` would: with a warning on stderr, or refused under `LEASEHOLD_REQUIRE_STORE`.
 */
export function storeUrl(options: StoreOptions): string {
  return options.store ?? process.env.LEASEHOLD_STORE ?? defaultStoreUrl();
}

/** What a command's options need of the store it opens, checked before the command uses it. */
const storeChecks: ((store: LeaseStore) => void)[] = [];

/** Has `withStore` run `check` on the store it opens, before `fn`; `check` throws to refuse it. */
export function checkOpenedStore(check: (store: LeaseStore) => void): void {
  storeChecks.push(check);
}

/**
 * Opens the store, runs the checks `checkOpenedStore` registered, runs `fn`, and closes the store
 * whatever happens; `fn`'s error wins over a close error.
 */
export async function withStore<T>(url: string, fn: (store: LeaseStore) => Promise<T>): Promise<T> {
  const store = await openQuietly(url);
  let result: T;
  try {
    for (const check of storeChecks) check(store);
    result = await fn(store);
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  await store.close();
  return result;
}

/**
 * Keeps the process alive until `promise` settles. The library's background timers (heartbeats,
 * deadlines) are unref'd, so a command that only waits for one of them to fire would otherwise exit.
 */
export async function keepAlive<T>(promise: Promise<T>): Promise<T> {
  const timer = setInterval(() => undefined, 60_000);
  try {
    return await promise;
  } finally {
    clearInterval(timer);
  }
}

/**
 * Refuses a store that lives inside one process (`memory:`, `sqlite::memory:`) for a command whose
 * point is exclusion across processes: each invocation would get its own empty store. Returns `url`.
 */
export function requireShared(url: string, needs: string): string {
  let parsed;
  try {
    parsed = parseStoreUrl(url);
  } catch {
    return url; // opening it reports what is wrong
  }
  if (parsed.scheme === 'memory' || (parsed.scheme === 'sqlite' && isPrivateSqlite(parsed))) {
    throw new CliFailure(`${parsed.redacted} lives inside one process; ${needs}`, 2);
  }
  return url;
}

/**
 * Whether a `sqlite:` URL opens a database no other process can see. better-sqlite3 trims the path
 * and opens `:memory:` in memory and an empty path as a private temporary file, so
 * `sqlite://:memory:`, `sqlite: :memory:` and `sqlite: ` are as private as `sqlite::memory:`.
 */
function isPrivateSqlite(url: StoreUrl): boolean {
  let path;
  try {
    path = parseSqliteUrl(url).path;
  } catch {
    return false; // opening it reports what is wrong
  }
  const file = path.trim();
  return file === '' || file === ':memory:';
}
