import { resolveOnWatchError, type WatchErrorHandler } from '../../core/watch-hub.js';
import { invalidArgument } from '../../core/errors.js';
import {
  checkIdentifier as checkName,
  checkInteger,
  checkKnownKeys,
  describe,
  optionKeys,
} from '../../core/options.js';
import { systemClock, type Clock } from '../../core/time.js';

/** Where a `SqliteStore` keeps its records, and how it waits, syncs and polls. */
export interface SqliteStoreOptions {
  /**
   * Table holding the lease records; `<table>_meta` holds the schema version and `<table>_events`
   * the release log `watch` reads. @default 'leasehold_leases'
   */
  table?: string;
  /**
   * How long, in ms, a call waits for another connection's lock (a long transaction, a backup, a
   * `sqlite3` shell) before failing with `STORE_UNAVAILABLE`. The wait is asynchronous: an attempt
   * on a locked file fails at once, and the attempts repeat with jittered backoff, the event loop
   * free between. `open` waits this long for a busy file too. @default 5000
   */
  busyTimeoutMs?: number;
  /**
   * Clock disagreement, in ms, a contender allows before treating a record as expired. Every
   * process sharing a SQLite file reads one host clock, so the default only absorbs small
   * wall-clock steps. @default 50
   */
  maxClockSkewMs?: number;
  /** `full` survives power loss without a token ever going backwards; `normal` is faster. @default 'full' */
  synchronous?: 'full' | 'normal';
  /**
   * How often, in ms, a store with `watch` listeners checks the file for releases by other
   * connections: one `PRAGMA data_version`, and a read of the release log only when it changed.
   * @default 25
   */
  watchPollMs?: number;
  /** Where "now" comes from when deciding expiry, and what times the watch's polls. @default the system clock */
  clock?: Clock;
  /**
   * Told when the watch's polls start failing (a `STORE_UNAVAILABLE` LeaseError, once per run of
   * failures; polling goes on), or when releases may have gone unheard.
   * @default emits a process warning
   */
  onWatchError?: WatchErrorHandler;
}

export const SQLITE_DEFAULTS = Object.freeze({
  table: 'leasehold_leases',
  busyTimeoutMs: 5000,
  maxClockSkewMs: 50,
  synchronous: 'full' as const,
  watchPollMs: 25,
});

const SQLITE_KEYS = optionKeys<SqliteStoreOptions>({
  table: true,
  busyTimeoutMs: true,
  maxClockSkewMs: true,
  synchronous: true,
  watchPollMs: true,
  clock: true,
  onWatchError: true,
});

export function checkIdentifier(field: string, value: unknown): string {
  return checkName(field, value, 58);
}

export function resolveSqliteOptions(
  options: SqliteStoreOptions = {},
): Required<SqliteStoreOptions> {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('SqliteStore options', options, SQLITE_KEYS);
  const synchronous = options.synchronous ?? SQLITE_DEFAULTS.synchronous;
  if (synchronous !== 'full' && synchronous !== 'normal')
    throw invalidArgument('synchronous', "must be 'full' or 'normal'");
  const onWatchError = resolveOnWatchError(options.onWatchError);
  return {
    table: checkIdentifier('table', options.table ?? SQLITE_DEFAULTS.table),
    busyTimeoutMs: checkInteger(
      'busyTimeoutMs',
      options.busyTimeoutMs ?? SQLITE_DEFAULTS.busyTimeoutMs,
      0,
      600_000,
    ),
    maxClockSkewMs: checkInteger(
      'maxClockSkewMs',
      options.maxClockSkewMs ?? SQLITE_DEFAULTS.maxClockSkewMs,
      0,
      3_600_000,
    ),
    synchronous,
    watchPollMs: checkInteger(
      'watchPollMs',
      options.watchPollMs ?? SQLITE_DEFAULTS.watchPollMs,
      1,
      60_000,
    ),
    clock: options.clock ?? systemClock,
    onWatchError,
  };
}
