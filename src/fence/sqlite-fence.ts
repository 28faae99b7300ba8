import { invalidArgument } from '../core/errors.js';
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
import { checkResource } from '../core/options.js';
import { sqliteFenceSql } from './sqlite-fence-sql.js';

/** The part of better-sqlite3's `Statement` a fence uses. */
export interface SqliteFenceStatement {
  /** Runs the statement with bound parameters. */
  run(...params: unknown[]): unknown;
  /** Runs the statement and returns its first row, or `undefined`. */
  get(...params: unknown[]): unknown;
}

/** The part of better-sqlite3's `Database` a fence uses; pass your own `Database`. */
export interface SqliteFenceDatabase {
  /** Compiles one SQL statement. */
  prepare(sql: string): SqliteFenceStatement;
  /** Runs SQL text (the table's creation). */
  exec(sql: string): unknown;
  /** Wraps `fn` in a transaction; `.immediate` runs it as `BEGIN IMMEDIATE`. */
  transaction(fn: AdvanceFn): {
    /** Runs `fn` in a `BEGIN IMMEDIATE` transaction. */
    immediate: AdvanceFn;
  };
}

/** The fence's transaction: advance the token, then run the caller's write. */
type AdvanceFn = (resource: string, token: number, write: () => unknown) => FenceResult<unknown>;
type Advance = <T>(resource: string, token: number, write: () => T) => FenceResult<T>;

/**
 * Rejects writes to a SQLite database made under a stale lease (design rule 3). `write` checks the
 * token and runs the caller's write in one `BEGIN IMMEDIATE` transaction (a savepoint when the
 * database is already in one), so the check and the write commit together or not at all.
 */
export class SqliteFence<D extends SqliteFenceDatabase = SqliteFenceDatabase> {
  /** The fence table's name. */
  readonly table: string;
  private readonly sql: ReturnType<typeof sqliteFenceSql>;
  private prepared: { highest: SqliteFenceStatement; run: Advance } | undefined;

  /** A fence on `db` (a better-sqlite3 `Database`); `init()` creates its table. */
  constructor(
    private readonly db: D,
    options?: FenceOptions,
  ) {
    if (typeof db !== 'object' || db === null || typeof db.prepare !== 'function')
      throw invalidArgument('db', 'must be a better-sqlite3 Database');
    this.table = resolveFenceOptions(options).table;
    this.sql = sqliteFenceSql(this.table);
  }

  /** Creates the fence table if it does not exist. */
  async init(): Promise<void> {
    try {
      this.db.exec(this.sql.create);
    } catch (error) {
      throw fenceError(error, `creating fence table ${this.table}`);
    }
  }

  /**
   * Runs `fn(db)` only if `token` is at least the highest token recorded for `resource`, recording
   * it in the same transaction. `fn` must be synchronous (better-sqlite3 is); if it throws, the
   * transaction rolls back, the token included, and the error is rethrown.
   */
  async write<T>(resource: string, token: number, fn: (db: D) => T): Promise<FenceResult<T>>;
  /**
   * The same, under `lease` (a `HeldLease`): a counting lease is fenced per permit, so holders of
   * different permits of one name never refuse each other's writes.
   */
  async write<T>(lease: FencedLease, fn: (db: D) => T): Promise<FenceResult<T>>;
  async write<T>(
    first: string | FencedLease,
    second: number | ((db: D) => T),
    third?: (db: D) => T,
  ): Promise<FenceResult<T>> {
    const { resource, token, fn } = writeArgs<(db: D) => T>(first, second, third);
    if (fn.constructor?.name === 'AsyncFunction') {
      throw invalidArgument(
        'fn',
        'must be synchronous on SQLite (better-sqlite3 cannot keep a transaction open across an await); nothing was run',
      );
    }
    const { run } = this.statements(resource);
    let inFn = false;
    try {
      return run(resource, token, () => {
        inFn = true;
        const value = fn(this.db);
        if (typeof (value as { then?: unknown } | null)?.then === 'function') {
          inFn = false;
          throw invalidArgument(
            'fn',
            'returned a promise: fences on SQLite need a synchronous fn (better-sqlite3 cannot keep a transaction open across an await). The transaction was rolled back, but any code of fn after its first await runs later, outside the fence',
          );
        }
        inFn = false;
        return value;
      });
    } catch (error) {
      if (inFn) throw error;
      throw fenceError(error, `fenced write on ${JSON.stringify(resource)}`);
    }
  }

  /**
   * The highest token recorded for `resource` (or for a lease's permit), or `null` before its
   * first accepted write.
   */
  async highest(target: string | FencedLease): Promise<number | null> {
    const resource = typeof target === 'string' ? checkResource(target) : fenceKey(target).resource;
    try {
      const row = this.statements(resource).highest.get(resource) as { token: unknown } | undefined;
      return row === undefined ? null : tokenOf(row.token);
    } catch (error) {
      throw fenceError(error, `reading the fence of ${JSON.stringify(resource)}`);
    }
  }

  /** Prepared on first use: preparing needs the table, which `init()` creates. */
  private statements(resource: string) {
    if (this.prepared) return this.prepared;
    let advance: SqliteFenceStatement;
    let highest: SqliteFenceStatement;
    try {
      advance = this.db.prepare(this.sql.advance);
      highest = this.db.prepare(this.sql.highest);
    } catch (error) {
      throw fenceError(error, `fence on ${JSON.stringify(resource)} (did you call init()?)`);
    }
    const tx = this.db.transaction((r, t, write) => {
      // A stale token returns no row and changes nothing, so committing equals rolling back.
      if (advance.get(r, t, Date.now()) === undefined) return { accepted: false };
      return { accepted: true, value: write() };
    });
    this.prepared = { highest, run: tx.immediate as Advance };
    return this.prepared;
  }
}
