import { ErrorCode, LeaseError } from '../../core/errors.js';
import {
  queryOptions as q,
  withConnection,
  type MysqlConnection,
  type MysqlPool,
} from './mysql-driver.js';
import { isOutOfRange } from './mysql-errors.js';
import { ServerClock } from './mysql-grant.js';
import type { ResolvedMysqlOptions } from './mysql-options.js';
import { groupStatements, statements, type GroupStatements, type Statements } from './mysql-ops.js';
import { bytes, toRecord, type Row } from './mysql-record.js';
import { migrate } from './mysql-schema.js';

/**
 * How a statement reaches the server: after the schema is ready (set up once, on first use), on
 * one pooled connection within the store's deadlines; with what every call shares (the
 * statements, the server clock estimate, whether the server answers `INSERT … RETURNING`).
 */
export class MysqlCalls {
  readonly sql: Statements;
  readonly groupSql: GroupStatements;
  /** Our estimate of the server clock, which lets an acquire answer in one statement. */
  readonly clock = new ServerClock();
  /** The server answers `INSERT … RETURNING` (MariaDB); read with the schema. */
  returning = false;
  /** The server in error messages, never with a password. */
  where = 'the given pool';
  private ready: Promise<void> | undefined;
  /** The schema is known to be current: calls go straight to the pool. */
  private migrated = false;

  constructor(
    readonly pool: MysqlPool,
    readonly options: ResolvedMysqlOptions,
  ) {
    this.sql = statements(options.table);
    this.groupSql = groupStatements(options.table);
  }

  /**
   * Rethrows `error`; when it is an acquire's failure out of range (a record that is not one
   * leasehold writes, or a token at 2^53 − 1 already: see `STOP` in mysql-ops.ts), reads the
   * first such record of `resources` (a second round trip on this path only) and answers
   * `RECORD_INVALID` saying what is wrong with it, or, for a valid record at the last token,
   * `STORE_UNAVAILABLE`, not retryable: no higher token exists.
   */
  async refused(error: unknown, resources: readonly string[]): Promise<never> {
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

  /** One call on one pooled connection within the store's deadlines, after the schema is ready. */
  async call(fn: (connection: MysqlConnection) => Promise<[unknown, unknown]>) {
    const [result] = await this.session(fn);
    return result;
  }

  /** `fn` on one pooled connection within the store's deadlines, after the schema is ready. */
  async session<T>(fn: (connection: MysqlConnection) => Promise<T>): Promise<T> {
    if (!this.migrated) await this.ensureSchema();
    return withConnection(this.pool, this.options, fn);
  }

  ensureSchema(): Promise<void> {
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
