import { loadDriver } from '../../core/load-driver.js';
import { withDeadline } from '../../core/deadline.js';
/** Per-call settings this store passes with every statement, whatever the pool's defaults are. */
export interface MysqlQueryOptions {
  sql: string;
  rowsAsArray?: boolean;
  nestTables?: boolean;
  typeCast?: boolean;
  supportBigNumbers?: boolean;
  bigNumberStrings?: boolean;
}

/** What the store binds: names and lease data as UTF-8 bytes, integers as numbers, `null` for no data. */
export type SqlValue = Buffer | number | null;

/** The part of a mysql2 promise `PoolConnection` this store uses. */
export interface MysqlConnection {
  query(options: MysqlQueryOptions, values?: SqlValue[]): Promise<[unknown, unknown]>;
  /**
   * A prepared statement. Statements answered by an OK packet (no rows) pass their text alone:
   * the per-call row settings cannot change an OK packet, and the options form costs mysql2
   * several times the text form on every call.
   */
  execute(options: MysqlQueryOptions | string, values?: SqlValue[]): Promise<[unknown, unknown]>;
  release(): void;
  destroy(): void;
}

/**
 * The part of a mysql2 promise `Pool` (`mysql2/promise` `createPool`, or `createPool(...).promise()`)
 * this store uses. A pool handed to the store must be created with `multipleStatements: true`.
 */
export interface MysqlPool {
  /** Checks a connection out; the store releases it, or destroys it after a failure. */
  getConnection(): Promise<MysqlConnection>;
  /** Closes the pool; the store calls it on `close()` only for a pool it created. */
  end(): Promise<void>;
}

/** What `mysql2` exports that `MysqlStore.open` needs. */
export interface MysqlDriver {
  createPool(config: object): { promise(): MysqlPool };
}

/** The OK packet of a statement that returns no rows. */
export interface OkPacket {
  affectedRows: number;
  insertId: number | string;
}

export interface Timeouts {
  readonly connectTimeoutMs: number;
  readonly queryTimeoutMs: number;
}

/** A call that got no answer in time; the store maps it to a retryable `STORE_UNAVAILABLE`. */
export class StoreTimeoutError extends Error {
  override readonly name = 'StoreTimeoutError';
  readonly code = 'LEASEHOLD_TIMEOUT';
}

const PER_CALL: Omit<MysqlQueryOptions, 'sql'> = Object.freeze({
  rowsAsArray: false,
  nestTables: false,
  typeCast: true,
  supportBigNumbers: true,
  bigNumberStrings: false,
});

export function queryOptions(sql: string): MysqlQueryOptions {
  return { ...PER_CALL, sql };
}

/**
 * Runs `fn` on one pooled connection with two deadlines: `connectTimeoutMs` to get the connection,
 * `queryTimeoutMs` for the work. mysql2's own query timeout starts only when a command reaches the
 * head of its connection's queue (and prepares have none), so it cannot promise this alone.
 * A connection whose work failed or timed out is destroyed, never reused: it may be mid-transaction
 * or still waiting on a paused server.
 */
export async function withConnection<T>(
  pool: MysqlPool,
  timeouts: Timeouts,
  fn: (connection: MysqlConnection) => Promise<T>,
): Promise<T> {
  const connection = await deadline(
    pool.getConnection(),
    timeouts.connectTimeoutMs,
    `no connection within ${timeouts.connectTimeoutMs} ms`,
    (late) => late.release(),
  );
  let result: T;
  try {
    result = await deadline(
      fn(connection),
      timeouts.queryTimeoutMs,
      `no answer within ${timeouts.queryTimeoutMs} ms`,
    );
  } catch (error) {
    connection.destroy();
    throw error;
  }
  connection.release();
  return result;
}

/** Settles like `promise`, or rejects with a `StoreTimeoutError` after `ms`; a late value goes to `onLate`. */
export function deadline<T>(
  promise: Promise<T>,
  ms: number,
  message: string,
  onLate?: (value: T) => void,
): Promise<T> {
  return withDeadline(promise, ms, () => new StoreTimeoutError(message), { onLate });
}

/** Loads `mysql2`, or fails with `DRIVER_MISSING` naming it. */
export function loadMysql2(): Promise<MysqlDriver> {
  return loadDriver<MysqlDriver>('mysql2', 'mysql');
}
