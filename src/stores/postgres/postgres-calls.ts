import { CallDeadlines } from '../../core/call-deadlines.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { ReplySizer } from '../../core/reply-sizer.js';
import { checkOut } from '../../drivers/pg-checkout.js';
import type { PgPool, PgPoolClient, PgQueryResult } from './postgres-driver.js';
import { isGroupRefusal } from './postgres-errors.js';
import type { ResolvedPostgresOptions } from './postgres-options.js';
import { channelName, statementName, statements, type Statements } from './postgres-ops.js';
import type { Row } from './postgres-record.js';
import { migrate } from './postgres-schema.js';

/** A statement with the name it is prepared under on each connection (when preparing). */
export interface Statement {
  readonly text: string;
  readonly name: string | undefined;
  /** The operation it serves, for errors. */
  readonly operation: string;
}

/**
 * How a statement reaches the server: after the schema is set up (once, on first use), on a
 * pooled connection, under the store's call deadline.
 */
export class PostgresCalls {
  readonly sql: { readonly [K in keyof Statements]: Statement };
  readonly channel: string;
  /**
   * How many records one acquireMany or list statement asks for, by the data the records this
   * store read and wrote lately carried.
   */
  readonly sizer = new ReplySizer();
  private readonly deadlines: CallDeadlines;
  private initialized: Promise<void> | undefined;
  /** The schema is known to be current: calls go straight to the pool. */
  private migrated = false;

  constructor(
    private readonly pool: PgPool,
    readonly options: ResolvedPostgresOptions,
  ) {
    const { label, statementTimeoutMs } = options;
    this.deadlines = new CallDeadlines(
      statementTimeoutMs,
      (operation) =>
        new LeaseError(
          ErrorCode.STORE_UNAVAILABLE,
          `${label} ${operation} failed: no answer within ${statementTimeoutMs} ms (statementTimeoutMs)`,
          { retryable: true },
        ),
    );
    const { schema, table, notify, prepare } = options;
    this.sql = Object.fromEntries(
      Object.entries(statements(schema, table, notify)).map(([key, text]) => [
        key,
        { text, name: prepare ? statementName(key, text) : undefined, operation: key },
      ]),
    ) as PostgresCalls['sql'];
    this.channel = channelName(schema, table);
  }

  /** The release statements' channel parameter: none when the store does not notify. */
  channelParam(): string[] {
    return this.options.notify ? [this.channel] : [];
  }

  /** One statement's rows. */
  async query(statement: Statement, values: unknown[]): Promise<Row[]> {
    return (await this.run(statement, values)).rows;
  }

  /**
   * One statement, one round trip, with a client-side deadline so a silent server cannot hang it.
   * Once the schema is known to be current, straight to the pool: a transition's own client work
   * is a fair share of its cost when the server is near.
   */
  run(statement: Statement, values: unknown[]): Promise<PgQueryResult> {
    if (this.migrated) return this.send(statement, values);
    return this.ready().then(() => this.send(statement, values));
  }

  /**
   * One statement on a pooled connection under the store's call deadline, which covers waiting for
   * a connection too. One timer serves every call (node-postgres' `query_timeout` arms one per
   * statement, measured at about a fifth of a transition's client time); a connection that gave
   * no answer by the deadline is closed, not reused, as `query_timeout` would have it.
   */
  send(statement: Statement, values: unknown[]): Promise<PgQueryResult> {
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
  ready(): Promise<void> {
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
