import type { Diagnosis } from '../../core/doctor.js';
import { diagnoseSqlite } from './sqlite-doctor.js';
import type { LeaseError } from '../../core/errors.js';
import { DelegatingStore } from '../../core/delegating-store.js';
import type { LeaseStore, StoreCapabilities, Unwatch, WatchListener } from '../../core/store.js';
import { LIMITS } from '../../core/options.js';
import type { SqliteDatabase } from './sqlite-driver.js';
import { SqliteCalls } from './sqlite-calls.js';
import { openFile, startConnection } from './sqlite-connect.js';
import { mapSqliteError } from './sqlite-errors.js';
import { resolveSqliteOptions, type SqliteStoreOptions } from './sqlite-options.js';
import { applyEach, TransitionGroup } from './sqlite-group.js';
import { BATCH_ROWS } from './sqlite-runner.js';
import type { ReleaseWatch } from './sqlite-watch.js';

/**
 * Leases in a SQLite file, shared safely by every process on the host that opens it.
 * WAL mode, one statement per transition (alone in autocommit, or with others asked at the same
 * time in one IMMEDIATE transaction); expiry on the caller's clock.
 * better-sqlite3 is synchronous, so every call runs through a `SqliteRunner`: a locked file is
 * waited for asynchronously and batches go in chunks, so no call holds the event loop for more
 * than a few milliseconds (design rule 6). Releases are also written to a log table that `watch`
 * polls.
 */
export class SqliteStore extends DelegatingStore implements LeaseStore {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'local',
    batch: true,
    watch: true,
    atomicGroupMax: LIMITS.groupMaxSize,
    data: true,
  });
  readonly maxClockSkewMs: number;
  private readonly releases: ReleaseWatch;
  /** @internal Every call, run in steps through the connection's runner. */
  protected readonly transitions: SqliteCalls;
  /** @internal The same object. */
  protected readonly batches: SqliteCalls;

  /**
   * Opens (creating when needed) the SQLite file at `path`; `':memory:'` for a private in-memory
   * database. Safe when many processes open one fresh file at once: a busy file is retried
   * asynchronously (each try blocks the event loop for a few milliseconds at most) until
   * `busyTimeoutMs`, as every later call on the store is.
   */
  static async open(path: string, options?: SqliteStoreOptions): Promise<SqliteStore> {
    const resolved = resolveSqliteOptions(options);
    return openFile(path, resolved, (db) => new SqliteStore(db, resolved));
  }

  /**
   * Uses an open better-sqlite3 database; the store closes it on `close()` and sets its busy
   * timeout to 0 (the store waits for locks itself, asynchronously). The file is set up in one
   * synchronous attempt that may wait up to `busyTimeoutMs` for a lock: prefer `open`.
   */
  constructor(
    private readonly db: SqliteDatabase,
    options?: SqliteStoreOptions,
  ) {
    super();
    const resolved = resolveSqliteOptions(options);
    this.maxClockSkewMs = resolved.maxClockSkewMs;
    const { records, runner, releases } = startConnection(db, resolved, (error, during) =>
      this.mapError(error, during),
    );
    this.releases = releases;
    const group = new TransitionGroup(
      (label, urgent, attempt) => runner.run(label, attempt, urgent),
      db.transaction(applyEach),
      BATCH_ROWS,
    );
    this.transitions = new SqliteCalls(runner, records, group, releases);
    this.batches = this.transitions;
  }

  /**
   * Calls `listener` with `{ type: 'released', resource }` after each release of a resource under
   * `prefix` commits, by any connection to the file: this store's own at once, others' within
   * about `watchPollMs`. Expiry is not announced (SQLite has no timer to do it), and a watcher that
   * falls more than ~10,000 releases behind misses some: treat events as hints and keep a periodic
   * scan. Returns the unsubscribe function.
   */
  watch(prefix: string, listener: WatchListener): Unwatch {
    this.checkWatch(prefix, listener);
    return this.releases.add(prefix, listener);
  }

  /** What `leasehold doctor` reports: the sync level, the journal mode and the folder's file system. */
  diagnose(): Promise<Diagnosis> {
    return this.guarded('diagnose', () => diagnoseSqlite(this.db));
  }

  protected async doClose(): Promise<void> {
    this.releases.stop();
    this.db.close();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapSqliteError(error, operation);
  }
}
