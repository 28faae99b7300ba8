import type { Diagnosis } from '../../core/doctor.js';
import { diagnoseSqlite } from './sqlite-doctor.js';
import type { LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import {
  StoreBase,
  type AcquireOutcome,
  type StoreCapabilities,
  type Unwatch,
  type WatchListener,
} from '../../core/store.js';
import { LIMITS } from '../../core/options.js';
import { dataSize, ReplySizer } from '../../core/reply-sizer.js';
import type { LeaseData } from '../../core/lease-data.js';
import type { SqliteDatabase } from './sqlite-driver.js';
import { acquireInChunks } from './sqlite-batch.js';
import { openFile, startConnection } from './sqlite-connect.js';
import { mapSqliteError } from './sqlite-errors.js';
import { readSizedPages } from './sqlite-list.js';
import { resolveSqliteOptions, type SqliteStoreOptions } from './sqlite-options.js';
import { applyEach, TransitionGroup } from './sqlite-group.js';
import { BATCH_ROWS, RENEW_ROWS, type SqliteRunner } from './sqlite-runner.js';
import type { SqliteTransitions } from './sqlite-transitions.js';
import type { ReleaseWatch } from './sqlite-watch.js';

/** Most candidates an acquireFirst may have to go with the grouped single-lease transitions. */
const GROUPED_CANDIDATES_MAX = 16;

/**
 * Leases in a SQLite file, shared safely by every process on the host that opens it.
 * WAL mode, one statement per transition (alone in autocommit, or with others asked at the same
 * time in one IMMEDIATE transaction); expiry on the caller's clock.
 * better-sqlite3 is synchronous, so every call runs through a `SqliteRunner`: a locked file is
 * waited for asynchronously and batches go in chunks, so no call holds the event loop for more
 * than a few milliseconds (design rule 6). Releases are also written to a log table that `watch`
 * polls.
 */
export class SqliteStore extends StoreBase {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'local',
    batch: true,
    watch: true,
    atomicGroupMax: LIMITS.groupMaxSize,
    data: true,
  });
  readonly maxClockSkewMs: number;
  private readonly releases: ReleaseWatch;
  private readonly runner: SqliteRunner;
  /** How many records one acquireMany step takes, by the data records carried lately. */
  private readonly sizer = new ReplySizer();
  private readonly transitions: TransitionGroup;
  private readonly records: SqliteTransitions;

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
    const started = startConnection(db, resolved, (error, during) => this.mapError(error, during));
    this.records = started.records;
    this.runner = started.runner;
    this.releases = started.releases;
    this.transitions = new TransitionGroup(
      (label, urgent, attempt) => this.runner.run(label, attempt, urgent),
      db.transaction(applyEach),
      BATCH_ROWS,
    );
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

  /**
   * Single-lease transitions asked for together (many callers at once) share one transaction and
   * one commit; each is still its own statement, applied in the order asked (see
   * `TransitionGroup`).
   */
  protected async doTryAcquire(
    resource: string,
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    return this.transitions.add('tryAcquire', () => this.records.grant(resource, owner, ttlMs));
  }

  /**
   * One IMMEDIATE transaction per chunk of `BATCH_ROWS` resources, each on one reading of the
   * clock; the event loop runs between chunks (see `acquireInChunks`). Each resource is its own
   * compare-and-set, as the contract says, so chunking changes no outcome.
   */
  protected override async doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return acquireInChunks(this.runner, this.records, this.sizer, resources, owner, ttlMs);
  }

  /**
   * One IMMEDIATE transaction, one synchronous step (see `takeAll`): every member probed on one
   * reading of the clock (expired only past `expiresAt + maxClockSkewMs`, as `tryAcquire`
   * decides), then all taken with the single acquire's statement, or none when one is live. At
   * `LIMITS.groupMaxSize` members the step is a fifth of the `BATCH_ROWS` chunk that bounds
   * `acquireMany`'s hold on the event loop.
   */
  protected override async doAcquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    return this.runner.run('acquireAll', () =>
      this.records.groupTransaction.immediate(resources, owner, ttlMs),
    );
  }

  /**
   * One IMMEDIATE transaction, one synchronous step (see `takeFirst`): the single acquire's
   * statement on each candidate in order, on one reading of the clock, until one is granted.
   * Measured on a loaded 2-core machine, 1,000 refusals (the most candidates allowed,
   * `LIMITS.permitsMax`) took 2.6–5 ms, about what a `BATCH_ROWS` chunk of grants takes.
   */
  protected override async doAcquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const take = (): Lease | null =>
      this.records.firstTransaction.immediate(resources, owner, ttlMs);
    // A few candidates (a counting lease's permits): with the single-lease transitions asked
    // meanwhile, one commit for all (nested in the group's transaction, it is a savepoint).
    if (resources.length <= GROUPED_CANDIDATES_MAX)
      return this.transitions.add('acquireFirst', take);
    return this.runner.run('acquireFirst', take);
  }

  protected override async doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    return this.transitions.add('renew', () => this.records.renew(lease, ttlMs));
  }

  protected override async doRelease(lease: LeaseRef): Promise<boolean> {
    const released = await this.transitions.add('release', () => this.records.release(lease));
    if (released) this.releases.poke();
    return released;
  }

  /** One transaction per chunk of `RENEW_ROWS` leases: one lock, one commit each. */
  protected async doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    return this.runner.runChunked(
      'renewMany',
      leases,
      (chunk) => this.records.renewBatch.immediate(chunk, ttlMs),
      RENEW_ROWS,
    );
  }

  /** One transaction per chunk of `RENEW_ROWS` leases. */
  protected async doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    const results = await this.runner.runChunked(
      'releaseMany',
      leases,
      (chunk) => this.records.releaseBatch.immediate(chunk),
      RENEW_ROWS,
    );
    if (results.includes(true)) this.releases.poke();
    return results;
  }

  /**
   * One statement: the compare-and-set on owner and token that writes the data only when it
   * holds (see `statements().writeData`), grouped with calls asked for at the same time as the
   * other single-lease transitions are.
   */
  protected override async doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    this.sizer.observe(dataSize(data), 1);
    return this.transitions.add('writeData', () => this.records.writeData(lease, data));
  }

  /**
   * `renew` and `release` carrying data: one transaction (one lock, one commit, as the plain
   * transition's statement alone), in which the plain transition's own statement is the
   * compare-and-set and the data is written only when it changed the record. Grouped with
   * other calls, the transaction is a savepoint in the group's.
   */
  protected override async doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    this.sizer.observe(dataSize(data), 1);
    return this.transitions.add('renew', () =>
      this.records.renewData.immediate(lease, ttlMs, data),
    );
  }

  protected override async doReleaseWithData(
    lease: LeaseRef,
    data: LeaseData | null,
  ): Promise<boolean> {
    this.sizer.observe(dataSize(data), 1);
    const released = await this.transitions.add('release', () =>
      this.records.releaseData.immediate(lease, data),
    );
    if (released) this.releases.poke();
    return released;
  }

  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    return this.runner.run('get', () => this.records.get(resource));
  }

  /**
   * One index range per read: from the prefix, or just past `after` when that is further on. A long
   * list is read in pages (see `readSizedPages`), each its own step.
   */
  protected async doList(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    return readSizedPages(limit, after, (from, n) =>
      this.runner.run('list', () => this.records.listPage(prefix, from, n)),
    );
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
