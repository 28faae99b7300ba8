import { ErrorCode, LeaseError } from '../../core/errors.js';
import { ATTEMPT_BUSY_MS } from './sqlite-busy.js';
import { loadBetterSqlite3, type SqliteDatabase } from './sqlite-driver.js';
import { mapSqliteError } from './sqlite-errors.js';
import { FileIdentity } from './sqlite-file-identity.js';
import { eventStatements, statements } from './sqlite-ops.js';
import type { SqliteStoreOptions } from './sqlite-options.js';
import { SqliteRunner } from './sqlite-runner.js';
import { setUpFile, setUpFileRetrying, SETUP_BUSY_TIMEOUT_MS } from './sqlite-schema.js';
import { prepareAll, SqliteTransitions } from './sqlite-transitions.js';
import { ReleaseWatch } from './sqlite-watch.js';

/** The options a connection is set up with, resolved. */
type Resolved = Required<SqliteStoreOptions>;

/** Connections `openFile` has already set up (with asynchronous retries), so the store skips it. */
const setUpByOpen = new WeakSet<SqliteDatabase>();

/**
 * Opens (creating when needed) the SQLite file at `path`, sets it up with asynchronous retries
 * (see `setUpFileRetrying`) and starts the store on the connection (`start`); the connection is
 * closed again when either fails. A file that cannot be opened is `STORE_UNAVAILABLE`, not
 * retryable.
 */
export async function openFile<T>(
  path: string,
  options: Resolved,
  start: (db: SqliteDatabase) => T,
): Promise<T> {
  const Database = await loadBetterSqlite3();
  let db: SqliteDatabase;
  try {
    db = new Database(path, {
      timeout: Math.min(SETUP_BUSY_TIMEOUT_MS, options.busyTimeoutMs),
    });
  } catch (error) {
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `cannot open SQLite file ${JSON.stringify(path)}: ${(error as Error).message}`,
      {
        cause: error,
        retryable: false,
      },
    );
  }
  try {
    await setUpFileRetrying(db, options);
    setUpByOpen.add(db);
    return start(db);
  } catch (error) {
    db.close();
    throw mapSqliteError(error, 'open');
  }
}

/** What a store runs on its connection. */
export interface SqliteConnection {
  /** The prepared statements and transactions every call runs. */
  readonly records: SqliteTransitions;
  /** Runs each call in steps that take turns and wait out locks, the file confirmed first. */
  readonly runner: SqliteRunner;
  /** Release notifications from the file's release log, on statements of their own. */
  readonly releases: ReleaseWatch;
}

/**
 * Readies `db` for a store (see `readyConnection`) and makes what the store runs on it; a failure
 * is `mapError(error, 'open')`. `mapError` is the store's, which the release watch reports with.
 */
export function startConnection(
  db: SqliteDatabase,
  options: Resolved,
  mapError: (error: unknown, during: string) => LeaseError,
): SqliteConnection {
  try {
    readyConnection(db, options);
    const sql = prepareAll(db, statements(options.table));
    const records = new SqliteTransitions(db, sql, options.clock, options.maxClockSkewMs);
    const identity = FileIdentity.of(db);
    const runner = new SqliteRunner({ busyTimeoutMs: options.busyTimeoutMs, identity });
    const releases = new ReleaseWatch({
      sql: prepareAll(db, eventStatements(options.table)),
      pollMs: options.watchPollMs,
      busyTimeoutMs: options.busyTimeoutMs,
      checkFile: () => identity?.peek('watch'),
      clock: options.clock,
      onError: options.onWatchError,
      mapError,
    });
    return { records, runner, releases };
  } catch (error) {
    throw mapError(error, 'open');
  }
}

/**
 * Readies a connection for the store: the file set up (WAL, sync level, schema) unless `openFile`
 * did, in one synchronous attempt that may wait up to `busyTimeoutMs` for a lock; then SQLite's
 * own busy handler set not to wait (see `ATTEMPT_BUSY_MS`).
 */
function readyConnection(db: SqliteDatabase, options: Resolved): void {
  if (!setUpByOpen.has(db)) {
    db.pragma(`busy_timeout = ${options.busyTimeoutMs}`);
    setUpFile(db, options);
  }
  // From here on SQLite's own busy handler does not wait: the runner waits out a lock
  // asynchronously, up to busyTimeoutMs.
  db.pragma(`busy_timeout = ${ATTEMPT_BUSY_MS}`);
}
