import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { prefixEnd, StoreBase, type StoreCapabilities } from '../../core/store.js';
import type { Clock } from '../../core/time.js';
import { loadDriver } from '../../core/load-driver.js';
import { resolveSqliteOptions, type SqliteStoreOptions } from './sqlite-options.js';
import { metaTable, migrations, SCHEMA_VERSION, statements } from './sqlite-sql.js';

/** The part of better-sqlite3's `Statement` this store uses. */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/** The part of better-sqlite3's `Database` this store uses. */
export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  pragma(sql: string, options?: { simple?: boolean }): unknown;
  transaction<F extends (...args: never[]) => unknown>(fn: F): Transaction<F>;
  close(): unknown;
}

/** better-sqlite3 runs a transaction function as BEGIN IMMEDIATE through `.immediate`. */
export type Transaction<F> = F & { immediate: F };

type Statements = { [K in keyof ReturnType<typeof statements>]: SqliteStatement };

/**
 * Leases in a SQLite file, shared safely by every process on the host that opens it.
 * WAL mode, a busy timeout, one statement per transition; expiry on the caller's clock.
 */
export class SqliteStore extends StoreBase {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'local',
    batch: true,
    watch: false,
  });
  readonly maxClockSkewMs: number;
  private readonly clock: Clock;
  private readonly sql: Statements;
  private readonly renewBatch: Transaction<
    (leases: readonly Lease[], ttlMs: number | undefined) => (Lease | null)[]
  >;
  private readonly releaseBatch: Transaction<(leases: readonly LeaseRef[]) => boolean[]>;

  /** Opens (creating when needed) the SQLite file at `path`; `':memory:'` for a private in-memory database. */
  static async open(path: string, options?: SqliteStoreOptions): Promise<SqliteStore> {
    const resolved = resolveSqliteOptions(options);
    const Database = await loadDriver<new (path: string, options?: object) => SqliteDatabase>(
      'better-sqlite3',
      'sqlite',
    );
    let db: SqliteDatabase;
    try {
      db = new Database(path, { timeout: resolved.busyTimeoutMs });
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
      return new SqliteStore(db, resolved);
    } catch (error) {
      db.close();
      throw error;
    }
  }

  /** Uses an open better-sqlite3 database; the store closes it on `close()`. */
  constructor(
    private readonly db: SqliteDatabase,
    options?: SqliteStoreOptions,
  ) {
    super();
    const resolved = resolveSqliteOptions(options);
    this.clock = resolved.clock;
    this.maxClockSkewMs = resolved.maxClockSkewMs;
    try {
      db.pragma('journal_mode = WAL');
      db.pragma(`busy_timeout = ${resolved.busyTimeoutMs}`);
      db.pragma(`synchronous = ${resolved.synchronous.toUpperCase()}`);
      migrate(db, resolved.table);
    } catch (error) {
      throw this.mapError(error, 'open');
    }
    const text = statements(resolved.table);
    this.sql = Object.fromEntries(
      Object.entries(text).map(([k, v]) => [k, db.prepare(v)]),
    ) as Statements;
    this.renewBatch = db.transaction((leases: readonly Lease[], ttlMs: number | undefined) => {
      const now = this.clock.now();
      return leases.map((lease) => this.renewOne(lease, ttlMs, now));
    });
    this.releaseBatch = db.transaction((leases: readonly LeaseRef[]) =>
      leases.map((lease) => this.releaseOne(lease)),
    );
  }

  protected async doTryAcquire(
    resource: string,
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const row = this.sql.acquire.get({
      resource,
      owner,
      ttl: ttlMs,
      now: this.clock.now(),
      skew: this.maxClockSkewMs,
    }) as { token: number; expiresAt: number } | undefined;
    return row ? { resource, owner, token: row.token, expiresAt: row.expiresAt, ttlMs } : null;
  }

  protected override async doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    return this.renewOne(lease, ttlMs, this.clock.now());
  }

  protected override async doRelease(lease: LeaseRef): Promise<boolean> {
    return this.releaseOne(lease);
  }

  /** All renewals in one transaction: one lock, one commit, whatever the batch size. */
  protected async doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    return this.renewBatch.immediate(leases, ttlMs);
  }

  protected async doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return this.releaseBatch.immediate(leases);
  }

  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    return (this.sql.get.get(resource) as LeaseRecord | undefined) ?? null;
  }

  protected async doList(prefix: string, limit: number): Promise<LeaseRecord[]> {
    const to = prefixEnd(prefix);
    const rows =
      to === undefined
        ? this.sql.listFrom.all({ from: prefix, limit })
        : this.sql.listRange.all({ from: prefix, to, limit });
    return rows as LeaseRecord[];
  }

  protected async doClose(): Promise<void> {
    this.db.close();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    if (error instanceof LeaseError) return error;
    const code = (error as { code?: unknown } | null)?.code;
    const message = error instanceof Error ? error.message : String(error);
    const busy = code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
    return new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `SQLite ${operation} failed${busy ? ' (database busy)' : ''}: ${message}`,
      {
        cause: error,
        retryable: busy || code === 'SQLITE_IOERR',
      },
    );
  }

  private renewOne(lease: Lease, ttlMs: number | undefined, now: number): Lease | null {
    const ttl = ttlMs ?? lease.ttlMs;
    const row = this.sql.renew.get({
      resource: lease.resource,
      owner: lease.owner,
      token: lease.token,
      now,
      ttl,
    }) as { expiresAt: number } | undefined;
    return row
      ? {
          resource: lease.resource,
          owner: lease.owner,
          token: lease.token,
          expiresAt: row.expiresAt,
          ttlMs: ttl,
        }
      : null;
  }

  private releaseOne(lease: LeaseRef): boolean {
    return (
      this.sql.release.run({ resource: lease.resource, owner: lease.owner, token: lease.token })
        .changes > 0
    );
  }
}

/** Creates or upgrades the schema under a write lock, so racing processes migrate once. */
function migrate(db: SqliteDatabase, table: string): void {
  db.exec(metaTable(table));
  const steps = migrations(table);
  db.transaction(() => {
    const row = db.prepare(statements(table).readVersion).get() as { value: number } | undefined;
    const current = row?.value ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `table "${table}" has schema version ${current}, newer than this leasehold understands (${SCHEMA_VERSION}); upgrade leasehold`,
        { retryable: false },
      );
    }
    for (let v = current; v < SCHEMA_VERSION; v++) db.exec(steps[v]!);
    if (current !== SCHEMA_VERSION) db.prepare(statements(table).writeVersion).run(SCHEMA_VERSION);
  }).immediate();
}
