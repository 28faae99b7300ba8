import { loadPg } from './postgres-driver.js';
import { ErrorCode, invalidArgument, LeaseError } from '../../core/errors.js';
import type { Diagnosis } from '../../core/doctor.js';
import { LIMITS } from '../../core/options.js';
import { checkOut } from '../../drivers/pg-checkout.js';
import { redact } from '../../core/store-url.js';
import { DelegatingStore } from '../../core/delegating-store.js';
import type { LeaseStore, StoreCapabilities, Unwatch, WatchListener } from '../../core/store.js';
import type { PgConnection, PgPool } from './postgres-driver.js';
import { PostgresBatch } from './postgres-batch.js';
import { PostgresCalls } from './postgres-calls.js';
import { diagnosePostgres } from './postgres-doctor.js';
import { mapPostgresError } from './postgres-errors.js';
import {
  resolvePostgresOptions,
  type PostgresStoreOptions,
  type ResolvedPostgresOptions,
} from './postgres-options.js';
import { watchStatements } from './postgres-ops.js';
import { PostgresTransitions } from './postgres-transitions.js';
import { Notifier } from './postgres-watch.js';

/**
 * Leases per `renewMany` / `releaseMany` statement. A longer batch goes as several statements,
 * one after another: node-postgres turns each array parameter into text in one synchronous step,
 * and reading 100,000 rows back came on top, so one statement of 100,000 held the event loop
 * 180–220 ms (design rule 6); statements of 10,000 hold it a few milliseconds each.
 */
export const BATCH_ROWS = 10_000;

/**
 * Leases in a PostgreSQL table. Expiry is decided on the server's clock (`clock_timestamp()`)
 * inside each statement; every operation, batches included, is one statement and one round trip.
 * Releases NOTIFY `watch` listeners (over one LISTEN connection per store) only while some watcher
 * has registered a prefix covering them; with nobody watching, a release sends nothing.
 */
export class PostgresStore extends DelegatingStore implements LeaseStore {
  readonly capabilities: StoreCapabilities;
  /** The server's clock is the only one that decides expiry, so no skew is allowed for. */
  readonly maxClockSkewMs = 0;
  protected override readonly batchPiece = BATCH_ROWS;
  private readonly options: ResolvedPostgresOptions;
  private readonly notifier: Notifier | undefined;
  private readonly ownsPool: boolean;
  private readonly calls: PostgresCalls;
  /** @internal */
  protected readonly transitions: PostgresTransitions;
  /** @internal */
  protected readonly batches: PostgresBatch;

  /**
   * Creates a pool from a `postgres://` URL or node-postgres `PoolConfig` fields (which win over
   * the pool settings derived from `options`); the store ends that pool on `close()`.
   */
  static async open(
    connection: PgConnection,
    options?: PostgresStoreOptions,
  ): Promise<PostgresStore> {
    const resolved = resolvePostgresOptions(options);
    if (options?.label === undefined && typeof connection === 'string')
      resolved.label = `PostgreSQL (${redact(connection)})`;
    if (typeof connection !== 'string' && (typeof connection !== 'object' || connection === null))
      throw invalidArgument('connection', 'must be a postgres:// URL or a pg PoolConfig object');
    const pg = await loadPg();
    const pool = new pg.Pool({
      max: resolved.poolSize,
      connectionTimeoutMillis: resolved.connectTimeoutMs,
      statement_timeout: resolved.statementTimeoutMs,
      keepAlive: true,
      allowExitOnIdle: true,
      ...(typeof connection === 'string' ? { connectionString: connection } : connection),
    });
    // An idle pooled connection that breaks (a server restart) is dropped by the pool and
    // replaced on the next call, whose own error (if the server is still away) is the one reported.
    pool.on('error', () => {});
    return new PostgresStore(pool, resolved, true);
  }

  /** Uses an existing `pg.Pool`; the store never ends a pool it was given. */
  constructor(pool: PgPool, options?: PostgresStoreOptions);
  /** @internal */
  constructor(pool: PgPool, options: PostgresStoreOptions | undefined, ownsPool: boolean);
  constructor(
    private readonly pool: PgPool,
    options?: PostgresStoreOptions,
    ownsPool = false,
  ) {
    super();
    if (typeof pool !== 'object' || pool === null || typeof pool.query !== 'function')
      throw invalidArgument('pool', 'must be a pg.Pool (or use PostgresStore.open with a URL)');
    this.options = resolvePostgresOptions(options);
    this.ownsPool = ownsPool;
    this.calls = new PostgresCalls(pool, this.options);
    this.transitions = new PostgresTransitions(this.calls);
    this.batches = new PostgresBatch(this.calls);
    const { schema, table, notify } = this.options;
    this.capabilities = Object.freeze({
      clock: 'store',
      batch: true,
      watch: notify,
      atomicGroupMax: LIMITS.groupMaxSize,
      data: true,
    });
    this.notifier = notify
      ? new Notifier({
          connect: () => checkOut(this.pool),
          ready: () => this.calls.ready(),
          channel: this.calls.channel,
          sql: watchStatements(schema, table),
          queryTimeoutMs: this.options.statementTimeoutMs,
          onError: this.options.onWatchError,
          mapError: (error, during) => this.mapError(error, during),
        })
      : undefined;
  }

  /**
   * Creates the schema, the table and its meta table when missing, or upgrades them, under an
   * advisory lock so concurrent first users migrate once. Every operation does this on first use;
   * call it to set a database up ahead of time (with a role allowed to create tables).
   */
  init(): Promise<void> {
    return this.guarded('init', () => this.calls.ready());
  }

  /**
   * Calls `listener` with `{ type: 'released', resource }` after each release of a resource under
   * `prefix` commits, within milliseconds, once the watch has registered `prefix` (a row in the
   * table's `_wait` table, written just after its LISTEN; a release checks for one). Releases that
   * began before the registration committed, or that happen while the LISTEN connection
   * reconnects, are not heard, and expiry is not announced (PostgreSQL has no timer to do it):
   * treat events as hints and keep a periodic scan. Returns the unsubscribe function.
   */
  watch(prefix: string, listener: WatchListener): Unwatch {
    this.checkWatch(prefix, listener);
    if (!this.notifier) {
      throw new LeaseError(
        ErrorCode.NOT_SUPPORTED,
        'watch needs notifications, which this store was opened without (notify: false); poll list() instead',
        { retryable: false },
      );
    }
    return this.notifier.add(prefix, listener);
  }

  /**
   * What `leasehold doctor` reports: the server's durability and replication settings that can
   * lose acknowledged grants (postgres-doctor.ts). Reads only, each statement under the call
   * deadline; the lease table need not exist and is not created.
   */
  diagnose(): Promise<Diagnosis> {
    return this.guarded('diagnose', () =>
      diagnosePostgres(
        async (text) =>
          (await this.calls.send({ text, name: undefined, operation: 'diagnose' }, [])).rows,
      ),
    );
  }

  protected async doClose(): Promise<void> {
    this.notifier?.stop();
    if (this.ownsPool) await this.pool.end();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapPostgresError(error, operation, this.options.label);
  }
}
