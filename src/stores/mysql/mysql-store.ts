import { loadMysql2 } from './mysql-driver.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { LIMITS } from '../../core/options.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import type { Diagnosis } from '../../core/doctor.js';
import { StoreBase, type AcquireOutcome, type StoreCapabilities } from '../../core/store.js';
import { yieldToLoop } from '../../core/time.js';
import { planBatch, planNames, planRanked } from './mysql-batch.js';
import { decodeGrant, ServerClock } from './mysql-grant.js';
import {
  deadline,
  queryOptions as q,
  withConnection,
  type MysqlConnection,
  type MysqlPool,
  type OkPacket,
  type SqlValue,
} from './mysql-driver.js';
import { diagnoseMysql } from './mysql-doctor.js';
import { isOutOfRange, mapMysqlError } from './mysql-errors.js';
import {
  poolConfig,
  resolveMysqlOptions,
  type MysqlConnectionOptions,
  type MysqlStoreOptions,
  type ResolvedMysqlOptions,
} from './mysql-options.js';
import {
  groupStatements,
  ref,
  statements,
  type GrantScript,
  type GroupStatements,
  type Statements,
} from './mysql-ops.js';
import {
  batchOutcome,
  bytes,
  dataOf,
  granted,
  int,
  stored,
  toRecord,
  type GrantRow,
  type Row,
} from './mysql-record.js';
import { migrate } from './mysql-schema.js';

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
export class MysqlStore extends StoreBase {
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
  private readonly sql: Statements;
  private readonly groupSql: GroupStatements;
  /** Our estimate of the server clock, which lets an acquire answer in one statement. */
  private readonly clock = new ServerClock();
  private ready: Promise<void> | undefined;
  /** The schema is known to be current: calls go straight to the pool. */
  private migrated = false;
  /** The server answers `INSERT … RETURNING` (MariaDB); read with the schema. */
  private returning = false;
  /** Whether `close()` ends the pool: only for a pool `open` created. */
  private ownsPool = false;
  /** The server in error messages, never with a password. */
  private where = 'the given pool';

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
    store.where = `mysql://${config.user ? `${config.user}@` : ''}${host}:${config.port}/${config.database}`;
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
    this.sql = statements(this.options.table);
    this.groupSql = groupStatements(this.options.table);
  }

  /**
   * Creates the lease table and its `_meta` table when missing, or checks that their schema
   * version is one this release understands. Safe to run from many processes at once (they
   * serialise on a named lock). Every other call runs it once first.
   */
  init(): Promise<void> {
    return this.guarded('init', () => this.ensureSchema());
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

  /**
   * One prepared statement, whose answer is the token and where the server clock stood against
   * our estimate; with the estimate more than `WINDOW` ms off (a first call, a clock step), a
   * second round trip reads the stored expiry, and the estimate is corrected for the next call.
   */
  protected async doTryAcquire(
    resource: string,
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const r = bytes(resource);
    const o = bytes(owner);
    return this.grant(resource, owner, ttlMs, r, o).catch((error: unknown) =>
      this.refused(error, [resource]),
    );
  }

  /** `doTryAcquire`'s round trip (or two). */
  private grant(
    resource: string,
    owner: string,
    ttlMs: number,
    r: Buffer,
    o: Buffer,
  ): Promise<Lease | null> {
    return this.session(async (c) => {
      const sent = Date.now();
      const at = this.clock.at(sent);
      const params = [r, o, at, ttlMs, at, o, ttlMs];
      let answer: unknown;
      let stored: { data: unknown } | undefined;
      if (this.returning) {
        const [rows] = await c.execute(q(this.sql.acquireReturning), params);
        const row = (rows as { answer: unknown; data: unknown }[])[0];
        answer = row?.answer ?? 0;
        stored = row;
      } else {
        const [results] = await c.query(q(this.sql.acquireThenRead), [...params, r, o]);
        const [ok, rows] = results as [OkPacket, { data: unknown }[]];
        answer = ok.insertId;
        stored = rows[0];
      }
      const grant = decodeGrant(answer, at);
      if (!grant) return null;
      // Granted, but no longer this grant's by the time it was read: lapsed already, taken over.
      if (!stored) return null;
      const { token } = grant;
      const data = dataOf(stored.data, resource);
      const lease = (expiresAt: number): Lease =>
        withData({ resource, owner, token, expiresAt, ttlMs }, data);
      if (grant.now !== undefined) {
        this.clock.observe(grant.now, sent);
        return lease(grant.now + ttlMs);
      }
      const [rows] = await c.execute(q(this.sql.grantedExpiry), [r, o, token]);
      const expiry = (rows as { expires_at: unknown }[])[0];
      // Gone already: the lease lapsed (or was taken over) before we could read it.
      if (!expiry) return null;
      const expiresAt = int(expiry.expires_at, 'expires_at');
      this.clock.observe(expiresAt - ttlMs, sent);
      return lease(expiresAt);
    });
  }

  /**
   * Rethrows `error`; when it is an acquire's failure out of range (a record that is not one
   * leasehold writes, or a token at 2^53 − 1 already: see `STOP` in mysql-ops.ts), reads the
   * first such record of `resources` (a second round trip on this path only) and answers
   * `RECORD_INVALID` saying what is wrong with it, or, for a valid record at the last token,
   * `STORE_UNAVAILABLE`, not retryable: no higher token exists.
   */
  private async refused(error: unknown, resources: readonly string[]): Promise<never> {
    if (!isOutOfRange(error)) throw error;
    const json = bytes(JSON.stringify(resources));
    const results = await this.call((c) => c.query(q(this.sql.invalid), [json]));
    const row = ((results as unknown[])[1] as Row[])[0];
    if (!row) throw error;
    const { resource, token } = toRecord({ ...row, data: null }); // RECORD_INVALID when corrupt
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `MySQL cannot grant ${JSON.stringify(resource)} on ${this.where}: its token is ${token}, and the next, ${2n ** 53n}, would be past 2^53 − 1`,
      { retryable: false, resource, cause: error },
    );
  }

  /** One round trip for the whole batch: the grants, and the live record behind each refusal. */
  protected override async doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    const batch = planNames(resources);
    const o = bytes(owner);
    const results = await this.call((c) =>
      c.query(q(this.sql.acquireBatch), [batch.json, o, ttlMs, o, ttlMs]),
    ).catch((error: unknown) => this.refused(error, resources));
    const outcomes: AcquireOutcome[] = resources.map((resource) => ({ resource, lease: null }));
    const rows = (results as unknown[])[3] as (Omit<Row, 'resource'> & { i: unknown })[];
    await inTurns(rows, (row) => {
      const position = batch.positions[int(row.i, 'batch row') - 1]!;
      outcomes[position] = batchOutcome(resources[position]!, owner, ttlMs, row);
    });
    return outcomes;
  }

  /** One round trip, one transaction: every member granted, or none and nothing written. */
  protected override async doAcquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    const batch = planNames(resources);
    const rows = await this.grantScript(this.groupSql.acquireAll, batch.json, owner, ttlMs).catch(
      (error: unknown) => this.refused(error, resources),
    );
    if (rows.length === 0) return null;
    if (rows.length !== resources.length)
      throw unexpected(`${rows.length} grants for a group of ${resources.length}`);
    const leases: Lease[] = new Array(resources.length);
    for (const row of rows) {
      const position = batch.positions[int(row.i, 'batch row') - 1]!;
      leases[position] = granted(resources[position]!, owner, row, ttlMs);
    }
    return leases;
  }

  /** One round trip, one transaction: the first free candidate in the caller's order, or `null`. */
  protected override async doAcquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const rows = await this.grantScript(
      this.groupSql.acquireFirst,
      planRanked(resources),
      owner,
      ttlMs,
      [bytes(resources[0]!), bytes(resources[0]!)],
    ).catch((error: unknown) => this.refused(error, resources));
    const row = rows[0];
    if (!row) return null;
    const resource = resources[int(row.p, 'candidate position')];
    if (resource === undefined) throw unexpected(`candidate position ${String(row.p)}`);
    return granted(resource, owner, row, ttlMs);
  }

  /** Sends a grant script (`groupStatements`) and returns its answer rows; each grant's expiry corrects the clock estimate. */
  private async grantScript(
    script: GrantScript,
    json: Buffer,
    owner: string,
    ttlMs: number,
    extra: SqlValue[] = [],
  ): Promise<GrantRow[]> {
    return this.session(async (c) => {
      const sent = Date.now();
      const [results] = await c.query(q(script.sql), [json, bytes(owner), ttlMs, ...extra]);
      const rows = (results as unknown[])[script.answerAt] as GrantRow[];
      if (rows[0]) this.clock.observe(int(rows[0].expires_at, 'expires_at') - ttlMs, sent);
      return rows;
    });
  }

  protected override async doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const expiresAt = await this.session(async (c) => {
      const sent = Date.now();
      const [ok] = await c.execute(this.sql.renew, [
        ttl,
        bytes(lease.resource),
        bytes(lease.owner),
        lease.token,
      ]);
      const stored = int((ok as OkPacket).insertId, 'expires_at');
      if (stored !== 0) this.clock.observe(stored - ttl, sent);
      return stored;
    });
    if (expiresAt === 0) return null;
    return { ...pick(lease), expiresAt, ttlMs: ttl };
  }

  protected override async doRelease(lease: LeaseRef): Promise<boolean> {
    const ok = (await this.call((c) =>
      c.execute(this.sql.release, [bytes(lease.resource), bytes(lease.owner), lease.token]),
    )) as OkPacket;
    return ok.affectedRows > 0;
  }

  protected override async doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const ok = (await this.call((c) =>
      c.execute(this.sql.writeData, [stored(data), ...ref(lease)]),
    )) as OkPacket;
    return int(ok.insertId, 'token') !== 0;
  }

  protected override async doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const expiresAt = await this.session(async (c) => {
      const sent = Date.now();
      const [ok] = await c.execute(this.sql.renewWithData, [stored(data), ttl, ...ref(lease)]);
      const stamp = int((ok as OkPacket).insertId, 'expires_at');
      if (stamp !== 0) this.clock.observe(stamp - ttl, sent);
      return stamp;
    });
    if (expiresAt === 0) return null;
    return withData({ ...pick(lease), expiresAt, ttlMs: ttl }, data);
  }

  protected override async doReleaseWithData(
    lease: LeaseRef,
    data: LeaseData | null,
  ): Promise<boolean> {
    const ok = (await this.call((c) =>
      c.execute(this.sql.releaseWithData, [stored(data), ...ref(lease)]),
    )) as OkPacket;
    return ok.affectedRows > 0;
  }

  protected async doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    if (leases.length === 1) return [await this.doRenew(leases[0]!, ttlMs)];
    const batch = planBatch(leases, (lease) => ttlMs ?? lease.ttlMs);
    const results = await this.call((c) => c.query(q(this.sql.renewBatch), [batch.json]));
    const out: (Lease | null)[] = leases.map(() => null);
    for (const row of (results as unknown[])[2] as { i: unknown; expiresAt: unknown }[]) {
      const entry = batch.entries[int(row.i, 'batch row') - 1]!;
      const renewed: Lease = {
        ...pick(entry.lease),
        expiresAt: int(row.expiresAt, 'expires_at'),
        ttlMs: entry.ttlMs,
      };
      for (const position of entry.positions) out[position] = renewed;
    }
    return out;
  }

  protected async doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    if (leases.length === 1) return [await this.doRelease(leases[0]!)];
    const batch = planBatch(leases, () => 0);
    const results = await this.call((c) => c.query(q(this.sql.releaseBatch), [batch.json]));
    const out = leases.map(() => false);
    for (const row of (results as unknown[])[2] as { i: unknown }[]) {
      out[batch.entries[int(row.i, 'batch row') - 1]!.positions[0]!] = true;
    }
    return out;
  }

  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    const rows = (await this.call((c) => c.execute(q(this.sql.get), [bytes(resource)]))) as Row[];
    return rows[0] ? toRecord(rows[0]) : null;
  }

  protected async doList(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    const from = bytes(prefix);
    // UTF-8 never contains 0xff, so bumping the last byte bounds every name that starts with `prefix`.
    const to = from.length === 0 ? undefined : Buffer.from(from);
    if (to) to[to.length - 1]! += 1;
    const rows = (await this.call((c) =>
      to
        ? c.execute(q(this.sql.listRange), [from, to, bytes(after), limit])
        : c.execute(q(this.sql.listFrom), [from, bytes(after), limit]),
    )) as Row[];
    const records: LeaseRecord[] = [];
    await inTurns(rows, (row) => records.push(toRecord(row)));
    return records;
  }

  /** Ends a pool of its own; a connection stuck on a silent server cannot hold this up for long. */
  protected async doClose(): Promise<void> {
    if (!this.ownsPool) return;
    const ms = this.options.connectTimeoutMs + this.options.queryTimeoutMs;
    await deadline(this.pool.end(), ms, `the pool did not close within ${ms} ms`);
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapMysqlError(error, operation, this.where);
  }

  /** One call on one pooled connection within the store's deadlines, after the schema is ready. */
  private async call(fn: (connection: MysqlConnection) => Promise<[unknown, unknown]>) {
    const [result] = await this.session(fn);
    return result;
  }

  /** `fn` on one pooled connection within the store's deadlines, after the schema is ready. */
  private async session<T>(fn: (connection: MysqlConnection) => Promise<T>): Promise<T> {
    if (!this.migrated) await this.ensureSchema();
    return withConnection(this.pool, this.options, fn);
  }

  private ensureSchema(): Promise<void> {
    this.ready ??= migrate(this.pool, this.options, this.sql).then(
      (returning) => {
        this.returning = returning;
        this.migrated = true;
      },
      (error: unknown) => {
        this.ready = undefined;
        throw error;
      },
    );
    return this.ready;
  }
}

/**
 * Answer rows handled per turn of the event loop: decoding 4 KiB of lease data took about 13 µs a
 * row here, so a turn stays near 3 ms however many rows a batch or a list returns (design rule 6).
 */
const ROWS_PER_TURN = 250;

/** `fn` on every row in order, yielding to the loop between slices of `ROWS_PER_TURN`. */
async function inTurns<R>(rows: readonly R[], fn: (row: R) => unknown): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_TURN) {
    if (start > 0) await yieldToLoop();
    const end = Math.min(rows.length, start + ROWS_PER_TURN);
    for (let i = start; i < end; i++) fn(rows[i]!);
  }
}

function unexpected(what: string): LeaseError {
  return new LeaseError(ErrorCode.STORE_UNAVAILABLE, `the server answered ${what}`, {
    retryable: false,
  });
}

function pick(lease: LeaseRef): LeaseRef {
  return { resource: lease.resource, owner: lease.owner, token: lease.token };
}
