import { ErrorCode, invalidArgument, LeaseError } from '../core/errors.js';
import { checkResource } from '../core/options.js';
import { checkOut } from '../drivers/pg-checkout.js';
import {
  fenceKey,
  writeArgs,
  type FencedLease,
  fenceError,
  resolveFenceOptions,
  tokenOf,
  type FenceOptions,
  type FenceResult,
} from './fence.js';
import { postgresFenceSql } from './postgres-fence-sql.js';

/** The part of a node-postgres query result a fence reads. */
export interface PgFenceQueryResult {
  /** The rows returned, one object per row. */
  rows: Record<string, unknown>[];
  /** The command tag: `COMMIT` answers `ROLLBACK` when the transaction had already failed. */
  command?: string;
}

/** One connection as node-postgres shapes it: a `Client`, or a `PoolClient` you checked out. */
export interface PgFenceClient {
  /** Runs one statement with bound `values`. */
  query(text: string, values?: unknown[]): Promise<PgFenceQueryResult>;
}

/** A connection checked out of a pool for one fenced write. */
export type PgFenceCheckedOut = PgFenceClient & { release(error?: Error | boolean): void };

/** The part of node-postgres's `Pool` a fence uses. */
export interface PgFencePool extends PgFenceClient {
  /**
   * Checks a connection out for one fenced write; it is released afterwards. With a callback,
   * node-postgres' form, called as the pool hands it over; a promise alone is fine too.
   */
  connect(
    callback?: (error: Error | undefined, client: PgFenceCheckedOut | undefined) => void,
  ): Promise<PgFenceCheckedOut> | void;
  /** The pool's connection count; its presence (with `connect`) is how a pool is told from a client. */
  readonly totalCount: number;
}

/**
 * Rejects writes to PostgreSQL made under a stale lease (design rule 3). `write` opens a transaction,
 * advances the resource's fence row only if `token` is at least the highest recorded, and runs the
 * caller's write on the same connection before one COMMIT. The fence row stays locked until then,
 * so concurrent writers of one resource run one after another, each judged on committed state.
 *
 * Give it a `Pool` (a connection is checked out per write) or a connected `Client`, which must not
 * be inside a transaction of its own; writes through one `Client` are queued, never interleaved.
 * `C` is what `fn` receives (say `pg.PoolClient`); by default only `query` is typed.
 */
export class PostgresFence<C extends PgFenceClient = PgFenceClient> {
  /** The fence table's name. */
  readonly table: string;
  private readonly sql: ReturnType<typeof postgresFenceSql>;
  private queue: Promise<unknown> = Promise.resolve();

  /** A fence on a node-postgres `Pool` or connected `Client`; `init()` creates its table. */
  constructor(
    private readonly db: PgFencePool | PgFenceClient,
    options?: FenceOptions,
  ) {
    if (typeof db !== 'object' || db === null || typeof db.query !== 'function')
      throw invalidArgument('db', 'must be a node-postgres Pool or Client');
    this.table = resolveFenceOptions(options).table;
    this.sql = postgresFenceSql(this.table);
  }

  /** Creates the fence table if it does not exist. */
  async init(): Promise<void> {
    try {
      await this.db.query(this.sql.create);
    } catch (error) {
      // Two processes creating the table at once: the loser trips over the winner's catalog row.
      const code = (error as { code?: unknown }).code;
      if (code === '23505' || code === '42P07') return;
      throw fenceError(error, `creating fence table ${this.table}`);
    }
  }

  /**
   * Runs `fn(client)` in the fence's transaction only if `token` is at least the highest token
   * recorded for `resource`. Rejected: rolls back, `fn` never runs. If `fn` throws: rolls back (the
   * token included) and rethrows.
   */
  async write<T>(
    resource: string,
    token: number,
    fn: (client: C) => Promise<T> | T,
  ): Promise<FenceResult<T>>;
  /**
   * The same, under `lease` (a `HeldLease`): a counting lease is fenced per permit, so holders of
   * different permits of one name never refuse each other's writes.
   */
  async write<T>(lease: FencedLease, fn: (client: C) => Promise<T> | T): Promise<FenceResult<T>>;
  async write<T>(
    first: string | FencedLease,
    second: number | ((client: C) => Promise<T> | T),
    third?: (client: C) => Promise<T> | T,
  ): Promise<FenceResult<T>> {
    const { resource, token, fn } = writeArgs<(client: C) => Promise<T> | T>(first, second, third);
    if (isPool(this.db)) {
      let client: PgFenceCheckedOut;
      try {
        client = await checkOut(this.db);
      } catch (error) {
        throw fenceError(error, `fenced write on ${JSON.stringify(resource)}: connect`);
      }
      let broken: Error | undefined;
      try {
        return await this.inTransaction(client as unknown as C, resource, token, fn, (e) => {
          broken = e;
        });
      } finally {
        client.release(broken);
      }
    }
    const client = this.db as C;
    const turn = this.queue.then(() => this.inTransaction(client, resource, token, fn, () => {}));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  /**
   * The highest token recorded for `resource` (or for a lease's permit), or `null` before its
   * first accepted write.
   */
  async highest(target: string | FencedLease): Promise<number | null> {
    const resource = typeof target === 'string' ? checkResource(target) : fenceKey(target).resource;
    try {
      const { rows } = await this.db.query(this.sql.highest, [resource]);
      return rows[0] === undefined ? null : tokenOf(rows[0].token);
    } catch (error) {
      throw fenceError(error, `reading the fence of ${JSON.stringify(resource)}`);
    }
  }

  private async inTransaction<T>(
    client: C,
    resource: string,
    token: number,
    fn: (client: C) => Promise<T> | T,
    discard: (error: Error) => void,
  ): Promise<FenceResult<T>> {
    const what = `fenced write on ${JSON.stringify(resource)}`;
    const rollback = async (): Promise<void> => {
      try {
        await client.query('ROLLBACK');
      } catch (error) {
        // The connection is in an unknown state: a pool must not hand it out again.
        discard(error instanceof Error ? error : new Error(String(error)));
      }
    };
    let accepted: boolean;
    try {
      await client.query(this.sql.begin);
      const { rows } = await client.query(this.sql.advance, [resource, token]);
      accepted = rows.length > 0;
    } catch (error) {
      await rollback();
      throw fenceError(error, what);
    }
    if (!accepted) {
      await rollback();
      return { accepted: false };
    }
    let value: T;
    try {
      value = await fn(client);
    } catch (error) {
      await rollback();
      throw error;
    }
    let committed: PgFenceQueryResult;
    try {
      committed = await client.query('COMMIT');
    } catch (error) {
      await rollback();
      throw fenceError(
        error,
        `${what}: COMMIT (if the connection was lost, it may have committed)`,
      );
    }
    if (committed.command === 'ROLLBACK') {
      // A statement inside fn failed and fn went on: PostgreSQL rolled everything back on COMMIT.
      throw new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `${what}: the transaction had failed inside fn, so COMMIT rolled it back: nothing was written`,
        { retryable: false },
      );
    }
    return { accepted: true, value };
  }
}

function isPool(db: PgFencePool | PgFenceClient): db is PgFencePool {
  const pool = db as Partial<PgFencePool>;
  return typeof pool.connect === 'function' && typeof pool.totalCount === 'number';
}
