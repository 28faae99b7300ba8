import { isBusy } from './sqlite-errors.js';

/**
 * The connection's `busy_timeout`: 0, so SQLite's own busy handler never sleeps and an attempt on a
 * locked file fails at once (in about 0.05 ms); all waiting happens in `retryAfterBusy`, off the
 * event loop. The handler sleeps synchronously, and a loaded machine oversleeps: measured on a
 * loaded 2-core machine, a 5 ms busy timeout held the loop 5.4 ms typically and up to 42 ms, a 1 ms
 * one up to 5 ms. The pauses below start at 1 ms, as the handler's own do.
 */
export const ATTEMPT_BUSY_MS = 0;
/**
 * The longest asynchronous pause between two attempts (before ±50 % jitter). The same for every
 * step: shorter pauses for renewals were tried as a priority between processes, and 20 processes
 * retrying every few milliseconds only crowded the lock further (a 20-worker fleet on one file
 * lost its leases at cold start). Within a process, renewals and releases go first (`Turns`).
 */
const BACKOFF_MAX_MS = 25;

/**
 * Runs `attempt` again, after its first try failed busy with `first`, until it no longer fails with
 * `SQLITE_BUSY` / `SQLITE_LOCKED`, pausing asynchronously (1, 2, 4 … 25 ms, ±50 % jitter) between
 * attempts, so a lock someone else holds never holds this process's event loop. (The first try
 * runs at once in `SqliteRunner`, which calls this only when it failed busy.) After each busy
 * failure `deadline()` (on `performance.now()`) is asked; once it has passed, that failure is
 * thrown as `giveUp(error)`.
 *
 * Repeating an attempt that failed busy cannot apply a write twice, because such an attempt
 * committed nothing:
 * - A lone single-lease transition is one statement in autocommit. A statement that fails busy
 *   (the write lock is taken, or its snapshot is stale: `SQLITE_BUSY_SNAPSHOT`) is rolled back
 *   whole: it changed nothing. Its commit happens as it completes, and the store reads it to its
 *   end (`all`/`run`), so a commit that failed is thrown, never answered as done.
 * - Every other write runs as `BEGIN IMMEDIATE … COMMIT` (better-sqlite3's
 *   `transaction().immediate`). A busy `BEGIN IMMEDIATE` took no lock and ran no statement.
 * - Once `BEGIN IMMEDIATE` succeeded, the connection holds the write lock (in WAL mode, the WAL
 *   write lock), so its statements have nothing left to wait for. If one still failed busy, the
 *   error leaves the transaction function and better-sqlite3 rolls the transaction back.
 * - `COMMIT` in WAL mode appends to the log under that same write lock and takes no other lock,
 *   so it is not busy. Where it can be (a rollback-journal file waiting for readers), SQLite
 *   documents that a busy `COMMIT` leaves the transaction open and uncommitted, and
 *   better-sqlite3's wrapper, seeing `inTransaction`, rolls it back before rethrowing.
 * - A busy autocommit read (`get`, `list`) changed nothing to begin with, and `SQLITE_LOCKED` (a
 *   conflict inside this connection) means the statement did not run.
 * So a busy failure always means "not committed": a retried acquire cannot take a token twice, and
 * a retried release cannot report `false` because its first attempt had landed.
 */
export async function retryAfterBusy<T>(
  attempt: () => T,
  deadline: () => number,
  giveUp: (lastError: unknown) => Error,
  first: unknown,
): Promise<T> {
  let error = first;
  for (let tries = 0; ; tries++) {
    const left = deadline() - performance.now();
    if (left <= 0) throw giveUp(error);
    const pause = Math.min(BACKOFF_MAX_MS, 2 ** tries) * (0.5 + Math.random());
    // Not unref'd: a caller is awaiting this call, and the wait ends by `deadline`.
    await new Promise((resolve) => setTimeout(resolve, Math.min(left, pause)));
    try {
      return attempt();
    } catch (next) {
      if (!isBusy(next)) throw next;
      error = next;
    }
  }
}
