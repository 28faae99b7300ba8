import { loadPg } from './postgres-driver.js';
import { ErrorCode, invalidArgument, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import { CallDeadlines } from '../../core/call-deadlines.js';
import type { Diagnosis } from '../../core/doctor.js';
import { LIMITS } from '../../core/options.js';
import { checkOut } from '../../drivers/pg-checkout.js';
import { readPaged } from '../../core/read-paged.js';
import { ReplySizer } from '../../core/reply-sizer.js';
import { redact } from '../../core/store-url.js';
import { yieldToLoop } from '../../core/time.js';
import {
  prefixEnd,
  StoreBase,
  type AcquireOutcome,
  type StoreCapabilities,
  type Unwatch,
  type WatchListener,
} from '../../core/store.js';
import type { PgConnection, PgPool, PgPoolClient, PgQueryResult } from './postgres-driver.js';
import { diagnosePostgres } from './postgres-doctor.js';
import { isGroupRefusal, isInvalidRefusal, mapPostgresError } from './postgres-errors.js';
import {
  resolvePostgresOptions,
  type PostgresStoreOptions,
  type ResolvedPostgresOptions,
} from './postgres-options.js';
import {
  channelName,
  columns,
  statementName,
  statements,
  watchStatements,
  type Statements,
} from './postgres-ops.js';
import {
  byteLength,
  granted,
  renewed,
  safeInteger,
  toBytea,
  toRecord,
  type Row,
} from './postgres-record.js';
import { migrate } from './postgres-schema.js';
import { Notifier } from './postgres-watch.js';

/**
 * Leases per `renewMany` / `releaseMany` statement. A longer batch goes as several statements,
 * one after another: node-postgres turns each array parameter into text in one synchronous step,
 * and reading 100,000 rows back came on top, so one statement of 100,000 held the event loop
 * 180–220 ms (design rule 6); statements of 10,000 hold it a few milliseconds each.
 */
export const BATCH_ROWS = 10_000;

/** A statement with the name it is prepared under on each connection (when preparing). */
interface Statement {
  readonly text: string;
  readonly name: string | undefined;
  /** The operation it serves, for errors. */
  readonly operation: string;
}

/**
 * Leases in a PostgreSQL table. Expiry is decided on the server's clock (`clock_timestamp()`)
 * inside each statement; every operation, batches included, is one statement and one round trip.
 * Releases NOTIFY `watch` listeners (over one LISTEN connection per store) only while some watcher
 * has registered a prefix covering them; with nobody watching, a release sends nothing.
 */
export class PostgresStore extends StoreBase {
  readonly capabilities: StoreCapabilities;
  /** The server's clock is the only one that decides expiry, so no skew is allowed for. */
  readonly maxClockSkewMs = 0;
  protected override readonly batchPiece = BATCH_ROWS;
  private readonly options: ResolvedPostgresOptions;
  private readonly sql: { readonly [K in keyof Statements]: Statement };
  private readonly channel: string;
  private readonly notifier: Notifier | undefined;
  private readonly ownsPool: boolean;
  private readonly deadlines: CallDeadlines;
  /**
   * How many records one acquireMany or list statement asks for, by the data the records this
   * store read and wrote lately carried.
   */
  private readonly sizer = new ReplySizer();
  private initialized: Promise<void> | undefined;
  /** The schema is known to be current: calls go straight to the pool. */
  private migrated = false;

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
    const { label, statementTimeoutMs } = this.options;
    this.deadlines = new CallDeadlines(
      statementTimeoutMs,
      (operation) =>
        new LeaseError(
          ErrorCode.STORE_UNAVAILABLE,
          `${label} ${operation} failed: no answer within ${statementTimeoutMs} ms (statementTimeoutMs)`,
          { retryable: true },
        ),
    );
    const { schema, table, notify, prepare } = this.options;
    this.sql = Object.fromEntries(
      Object.entries(statements(schema, table, notify)).map(([key, text]) => [
        key,
        { text, name: prepare ? statementName(key, text) : undefined, operation: key },
      ]),
    ) as PostgresStore['sql'];
    this.channel = channelName(schema, table);
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
          ready: () => this.ready(),
          channel: this.channel,
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
    return this.guarded('init', () => this.ready());
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
          (await this.send({ text, name: undefined, operation: 'diagnose' }, [])).rows,
      ),
    );
  }

  protected doTryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    return this.run(this.sql.acquire, [resource, owner, ttlMs]).then(
      ({ rows: [row] }) => (row ? granted(resource, owner, ttlMs, row) : null),
      (error: unknown) => this.refused(error, [resource]),
    );
  }

  /**
   * Rethrows `error`; when it is an acquire's refusal of a corrupt record (`isInvalidRefusal`),
   * as `RECORD_INVALID` saying what is wrong with the first such record of `resources`, read
   * after the refusal (a second round trip on this path only). A valid record refused for its
   * token being 2^53 − 1 already is `STORE_UNAVAILABLE`, not retryable: no higher one exists.
   */
  private async refused(error: unknown, resources: readonly string[]): Promise<never> {
    if (!isInvalidRefusal(error)) throw error;
    const [row] = await this.query(this.sql.invalid, [resources]);
    if (!row)
      throw new LeaseError(
        ErrorCode.RECORD_INVALID,
        `${this.options.label} refused a record of ${JSON.stringify(resources[0])}${resources.length > 1 ? ' …' : ''} that was not one leasehold writes, since repaired or removed`,
        { retryable: false, cause: error },
      );
    const { resource } = toRecord(row); // throws RECORD_INVALID for what is wrong with it
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `${this.options.label} cannot grant ${JSON.stringify(resource)}: its token is ${Number.MAX_SAFE_INTEGER}, and the next, ${2n ** 53n}, would be past 2^53 − 1`,
      { retryable: false, resource, cause: error },
    );
  }

  /**
   * One statement for the whole batch: the grants, and the live record behind each refusal. Where
   * records carry lease data, a big batch goes as several statements one after another, the event
   * loop free between them, each bringing back about `ReplySizer`'s budget of data.
   */
  protected override async doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    const size = this.sizer.records(resources.length);
    if (size >= resources.length) return this.acquireManyOnce(resources, owner, ttlMs);
    const outcomes: AcquireOutcome[] = [];
    for (let start = 0; start < resources.length; start += size) {
      if (start > 0) await yieldToLoop();
      const chunk = resources.slice(start, start + size);
      for (const outcome of await this.acquireManyOnce(chunk, owner, ttlMs)) outcomes.push(outcome);
    }
    return outcomes;
  }

  private async acquireManyOnce(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    const rows = await this.query(this.sql.acquireMany, [resources, owner, ttlMs]).catch(
      (error: unknown) => this.refused(error, resources),
    );
    let dataBytes = 0;
    for (const row of rows) dataBytes += byteLength(row.data) + byteLength(row.held_data);
    this.sizer.observe(dataBytes, rows.length);
    const outcomes: AcquireOutcome[] = resources.map((resource) => ({ resource, lease: null }));
    for (const row of rows) {
      const i = Number(row.ord) - 1;
      const resource = resources[i]!;
      if (row.token !== null) {
        outcomes[i] = { resource, lease: granted(resource, owner, ttlMs, row) };
      } else if (row.held_owner !== null) {
        const holder = toRecord({
          resource,
          owner: row.held_owner,
          token: row.held_token,
          expires_at: row.held_expires_at,
          data: row.held_data,
        });
        outcomes[i] = { resource, lease: null, holder };
      }
    }
    return outcomes;
  }

  /**
   * One statement: every member through the single acquire's compare-and-set in resource order,
   * or none (see `statements().acquireAll`). A member taken since the statement's snapshot makes
   * it fail whole (`isGroupRefusal`); that is answered as the refusal it is.
   */
  protected override async doAcquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    let rows: Row[];
    try {
      rows = await this.query(this.sql.acquireAll, [resources, owner, ttlMs]);
    } catch (error) {
      if (isGroupRefusal(error)) return null;
      return this.refused(error, resources);
    }
    if (rows.length === 0) return null;
    if (rows.length !== resources.length)
      throw new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `${this.options.label} acquireAll failed: ${rows.length} of ${resources.length} members came back`,
        { retryable: false },
      );
    const leases: Lease[] = new Array(resources.length);
    for (const row of rows) {
      const i = Number(row.ord) - 1;
      leases[i] = granted(resources[i]!, owner, ttlMs, row);
    }
    return leases;
  }

  /**
   * One statement picks the first free candidate and takes it (see `statements().acquireFirst`).
   * Only when the never-written candidate it tried was created by someone else during the
   * statement is it sent again: that record is written now, so every repeat has one candidate
   * fewer to lose, and a caller racing others for the first permits still finds a free one.
   */
  protected override async doAcquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    let row: Row | undefined;
    for (let tries = 0; tries <= resources.length; tries++) {
      [row] = await this.query(this.sql.acquireFirst, [resources, owner, ttlMs]).catch(
        (error: unknown) => this.refused(error, resources),
      );
      if (row?.token !== null) break;
    }
    if (!row || row.token === null) return null;
    return granted(String(row.resource), owner, ttlMs, row);
  }

  protected override async doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const [row] = await this.query(this.sql.renew, [lease.resource, lease.owner, lease.token, ttl]);
    return row ? renewed(lease, safeInteger(row.expires_at, 'expires_at'), ttl) : null;
  }

  protected override doRelease(lease: Lease): Promise<boolean> {
    const values = [lease.resource, lease.owner, lease.token, ...this.channelParam()];
    return this.run(this.sql.release, values).then((result) => result.rowCount === 1);
  }

  /** One statement: the compare-and-set on owner and token, and the data when it held. */
  protected override async doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const values = [lease.resource, lease.owner, lease.token, toBytea(data)];
    this.sizer.observe(byteLength(values[3]), 1);
    return (await this.run(this.sql.writeData, values)).rowCount === 1;
  }

  /** One statement: the plain renew's UPDATE, and the data written when it changed the row. */
  protected override async doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const values = [lease.resource, lease.owner, lease.token, ttl, toBytea(data)];
    this.sizer.observe(byteLength(values[4]), 1);
    const [row] = await this.query(this.sql.renewData, values);
    return row
      ? withData(renewed(lease, safeInteger(row.expires_at, 'expires_at'), ttl), data)
      : null;
  }

  /** One statement: the plain release's UPDATE (its NOTIFY included), and the data. */
  protected override async doReleaseWithData(
    lease: LeaseRef,
    data: LeaseData | null,
  ): Promise<boolean> {
    const values = [
      lease.resource,
      lease.owner,
      lease.token,
      toBytea(data),
      ...this.channelParam(),
    ];
    this.sizer.observe(byteLength(values[3]), 1);
    return (await this.run(this.sql.releaseData, values)).rowCount === 1;
  }

  protected async doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    const ttls = leases.map((lease) => ttlMs ?? lease.ttlMs);
    const rows = await this.query(this.sql.renewMany, [...columns(leases), ttls]);
    const expiresAt = new Map<number, number>();
    for (const row of rows)
      expiresAt.set(Number(row.ord), safeInteger(row.expires_at, 'expires_at'));
    return leases.map((lease, i) => {
      const at = expiresAt.get(i + 1);
      return at === undefined ? null : renewed(lease, at, ttls[i]!);
    });
  }

  protected async doReleaseMany(leases: readonly Lease[]): Promise<boolean[]> {
    const rows = await this.query(this.sql.releaseMany, [
      ...columns(leases),
      ...this.channelParam(),
    ]);
    const done = new Set(rows.map((row) => Number(row.ord)));
    return leases.map((_, i) => done.has(i + 1));
  }

  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    const [row] = await this.query(this.sql.get, [resource]);
    return row ? toRecord({ ...row, resource }) : null;
  }

  /**
   * One statement for the page; where records carry lease data, a long page is read as several
   * statements one after another (each past the last record of the one before), the event loop
   * free between them, so decoding never holds it long. A record that changes meanwhile shows its
   * old or its new state, as across two `list` calls paging with `after`.
   */
  protected doList(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    return readPaged(
      limit,
      after,
      (from, n) => this.listOnce(prefix, n, from),
      (left) => this.sizer.records(left),
    );
  }

  private async listOnce(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    const to = prefixEnd(prefix);
    const rows =
      to === undefined
        ? await this.query(this.sql.listFrom, [prefix, after, limit])
        : await this.query(this.sql.listRange, [prefix, to, after, limit]);
    let dataBytes = 0;
    for (const row of rows) dataBytes += byteLength(row.data);
    this.sizer.observe(dataBytes, rows.length);
    return rows.map(toRecord);
  }

  protected async doClose(): Promise<void> {
    this.notifier?.close();
    if (this.ownsPool) await this.pool.end();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapPostgresError(error, operation, this.options.label);
  }

  private channelParam(): string[] {
    return this.options.notify ? [this.channel] : [];
  }

  /** One statement's rows. */
  private async query(statement: Statement, values: unknown[]): Promise<Row[]> {
    return (await this.run(statement, values)).rows;
  }

  /**
   * One statement, one round trip, with a client-side deadline so a silent server cannot hang it.
   * Once the schema is known to be current, straight to the pool: a transition's own client work
   * is a fair share of its cost when the server is near.
   */
  private run(statement: Statement, values: unknown[]): Promise<PgQueryResult> {
    if (this.migrated) return this.send(statement, values);
    return this.ready().then(() => this.send(statement, values));
  }

  /**
   * One statement on a pooled connection under the store's call deadline, which covers waiting for
   * a connection too. One timer serves every call (node-postgres' `query_timeout` arms one per
   * statement, measured at about a fifth of a transition's client time); a connection that gave
   * no answer by the deadline is closed, not reused, as `query_timeout` would have it.
   */
  private send(statement: Statement, values: unknown[]): Promise<PgQueryResult> {
    return this.deadlines.bound<PgQueryResult>(statement.operation, (resolve, reject) => {
      let client: PgPoolClient | undefined;
      let late = false;
      let released = false;
      const release = (error?: Error): void => {
        if (released) return;
        released = true;
        client!.release(error);
      };
      checkOut(this.pool).then((checkedOut) => {
        if (late) return checkedOut.release(); // came after the deadline: unused, still good
        client = checkedOut;
        checkedOut.query({ text: statement.text, name: statement.name, values }).then(
          (result) => {
            release();
            resolve(result);
          },
          (error: unknown) => {
            // A refused group failed on purpose, on a connection still in step: keep it.
            if (isGroupRefusal(error)) release();
            else release(error instanceof Error ? error : new Error(String(error)));
            reject(error);
          },
        );
      }, reject);
      return () => {
        late = true;
        if (client) release(new Error('no answer by the call deadline'));
      };
    });
  }

  /** Sets the table up on first use (see `migrate`), once: a failure is tried again next call. */
  private ready(): Promise<void> {
    this.initialized ??= migrate(this.pool, this.options).then(
      () => {
        this.migrated = true;
      },
      (error: unknown) => {
        this.initialized = undefined; // the next call tries again
        throw error;
      },
    );
    return this.initialized;
  }
}
