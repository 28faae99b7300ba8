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
  /** The path it was opened with (better-sqlite3 sets it), to notice the file being replaced. */
  readonly name?: string;
  /** True for an in-memory database, which has no file to watch. */
  readonly memory?: boolean;
}

/** better-sqlite3 runs a transaction function as BEGIN IMMEDIATE through `.immediate`. */
export type Transaction<F> = F & { immediate: F };
