import { loadMysql2 } from './mysql-driver.js';
import type { LeaseError } from '../../core/errors.js';
import { LIMITS } from '../../core/options.js';
import type { Diagnosis } from '../../core/doctor.js';
import { DelegatingStore } from '../../core/delegating-store.js';
import type { LeaseStore, StoreCapabilities } from '../../core/store.js';
import { MysqlBatch } from './mysql-batch.js';
import { MysqlCalls } from './mysql-calls.js';
import { deadline, queryOptions as q, withConnection, type MysqlPool } from './mysql-driver.js';
import { diagnoseMysql } from './mysql-doctor.js';
import { mapMysqlError } from './mysql-errors.js';
import {
  poolConfig,
  resolveMysqlOptions,
  type MysqlConnectionOptions,
  type MysqlStoreOptions,
  type ResolvedMysqlOptions,
} from './mysql-options.js';
import { MysqlTransitions } from './mysql-transitions.js';

/**
 * Leases per batch statement. A longer `renewMany`/`releaseMany` goes as several statements, one
 * after another, each its own transaction and round trip under the call deadline: 100,000 leases
 * in one statement took more than the 5 s deadline on a loaded MariaDB here.
 */
export const BATCH_ROWS = 10_000;

/**
 * Leases in a MySQL 8 or MariaDB 10.6+ table. Expiry is decided on the server's clock inside each
 * compare-and-set. Acquire, renew and release are one prepared statement each, batches one round
 * trip each (see mysql-ops.ts for how each one reports back); an acquire takes a second round trip
 * only while this process's estimate of the server clock is more than half a second off. Records
 * keep lease data: `writeData` and renew or release with data are one prepared statement each,
 * and every grant returns the record's data in its one round trip (on MySQL, which has no
 * `RETURNING`, the single acquire is then two statements in one query rather than one prepared).
 * `acquireAll` (up to `LIMITS.groupMaxSize` members) and `acquireFirst` are one transaction in one
 * round trip each (see `groupStatements` in mysql-ops.ts).
 */
export class MysqlStore extends DelegatingStore implements LeaseStore {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'store',
    batch: true,
    watch: false,
    atomicGroupMax: LIMITS.groupMaxSize,
    data: true,
  });
  /** The server's clock decides expiry, so contenders allow no skew. */
  readonly maxClockSkewMs = 0;
  protected override readonly batchPiece = BATCH_ROWS;
  private readonly options: ResolvedMysqlOptions;
  private readonly calls: MysqlCalls;
  /** @internal */
  protected readonly transitions: MysqlTransitions;
  /** @internal */
  protected readonly batches: MysqlBatch;
  /** Whether `close()` ends the pool: only for a pool `open` created. */
  private ownsPool = false;

  /**
   * Connects with a pool of its own (closed by `close()`), creating the table when missing.
   * Fails with `STORE_UNAVAILABLE` within `connectTimeoutMs + queryTimeoutMs` if the server is
   * unreachable.
   */
  static async open(options: MysqlConnectionOptions): Promise<MysqlStore> {
    const resolved = resolveMysqlOptions(options);
    const config = poolConfig(options, resolved);
    const driver = await loadMysql2();
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const store = new MysqlStore(driver.createPool(config).promise(), resolved);
    store.ownsPool = true;
    store.calls.where = `mysql://${config.user ? `${config.user}@` : ''}${host}:${config.port}/${config.database}`;
    try {
      await store.init();
    } catch (error) {
      await store.close().catch(() => {});
      throw error;
    }
    return store;
  }

  /**
   * Uses an existing mysql2 promise pool created with `multipleStatements: true` and autocommit
   * on (the default). The pool stays the caller's: `close()` does not end it. The table is
   * created on first use.
   */
  constructor(
    private readonly pool: MysqlPool,
    options?: MysqlStoreOptions,
  ) {
    super();
    this.options = resolveMysqlOptions(options);
    this.calls = new MysqlCalls(pool, this.options);
    this.transitions = new MysqlTransitions(this.calls);
    this.batches = new MysqlBatch(this.calls, this.transitions);
  }

  /**
   * Creates the lease table and its `_meta` table when missing, or checks that their schema
   * version is one this release understands. Safe to run from many processes at once (they
   * serialise on a named lock). Every other call runs it once first.
   */
  init(): Promise<void> {
    return this.guarded('init', () => this.calls.ensureSchema());
  }

  /**
   * What `leasehold doctor` reports: the server's durability and replication settings that can
   * lose acknowledged grants (mysql-doctor.ts). Reads only, on one pooled connection within the
   * store's deadlines; the lease table need not exist and is not created.
   */
  diagnose(): Promise<Diagnosis> {
    return this.guarded('diagnose', () =>
      withConnection(this.pool, this.options, (c) =>
        diagnoseMysql(async (sql) => (await c.query(q(sql)))[0] as Record<string, unknown>[]),
      ),
    );
  }

  /** Ends a pool of its own; a connection stuck on a silent server cannot hold this up for long. */
  protected async doClose(): Promise<void> {
    if (!this.ownsPool) return;
    const ms = this.options.connectTimeoutMs + this.options.queryTimeoutMs;
    await deadline(this.pool.end(), ms, `the pool did not close within ${ms} ms`);
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapMysqlError(error, operation, this.calls.where);
  }
}
