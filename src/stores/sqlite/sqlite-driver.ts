import { loadDriver } from '../../core/load-driver.js';
/** The part of better-sqlite3's `Statement` this store uses. */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/** The part of better-sqlite3's `Database` this store uses. */
export interface SqliteDatabase {
  /** Compiles one SQL statement. */
  prepare(sql: string): SqliteStatement;
  /** Runs SQL text that may hold several statements (schema setup). */
  exec(sql: string): unknown;
  /** Runs a `PRAGMA`; `simple` returns the first column of the first row. */
  pragma(sql: string, options?: { simple?: boolean }): unknown;
  /**
   * Wraps `fn` so that calling it runs it in one transaction.
   * @typeParam F - the function's own type, kept by the wrapper.
   */
  transaction<F extends (...args: never[]) => unknown>(fn: F): Transaction<F>;
  /** Closes the connection. */
  close(): unknown;
  /** The path it was opened with (better-sqlite3 sets it), to notice the file being replaced. */
  readonly name?: string;
  /** True for an in-memory database, which has no file to watch. */
  readonly memory?: boolean;
}

/** better-sqlite3 runs a transaction function as BEGIN IMMEDIATE through `.immediate`. */
export type Transaction<F> = F & { immediate: F };

/** Loads `better-sqlite3`'s `Database` constructor, or fails with `DRIVER_MISSING` naming it. */
export function loadBetterSqlite3(): Promise<
  new (path: string, options?: object) => SqliteDatabase
> {
  return loadDriver<new (path: string, options?: object) => SqliteDatabase>(
    'better-sqlite3',
    'sqlite',
  );
}
