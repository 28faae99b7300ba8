import { ErrorCode, LeaseError } from '../../core/errors.js';

/** better-sqlite3 reports extended codes (`SQLITE_BUSY_SNAPSHOT`, `SQLITE_LOCKED_SHAREDCACHE`, …). */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)(_|$)/.test(code);
}

/**
 * Whether `error` is a NOT NULL constraint failing: what the acquire statement fails with when the
 * row it would take is not one leasehold writes (see `statements().acquire`).
 */
export function isNotNull(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SQLITE_CONSTRAINT_NOTNULL';
}

/** A driver error as a `LeaseError`: busy and I/O errors are retryable, the rest are not. */
export function mapSqliteError(error: unknown, operation: string): LeaseError {
  if (error instanceof LeaseError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  const busy = isBusy(error);
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `SQLite ${operation} failed${busy ? ' (database busy)' : ''}: ${message}`,
    {
      cause: error,
      retryable: busy || (typeof code === 'string' && code.startsWith('SQLITE_IOERR')),
    },
  );
}

/** An operation gave up after another connection kept the database locked for its whole `busyTimeoutMs`. */
export function lockedError(
  operation: string,
  waitedMs: number,
  busyTimeoutMs: number,
  cause: unknown,
): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `SQLite ${operation} failed (database busy): the database was locked by another connection ` +
      `for ${Math.round(waitedMs)} ms (busyTimeoutMs is ${busyTimeoutMs})`,
    { cause, retryable: true },
  );
}

/** The store's file no longer sits at its path: every later call fails with this. */
export function fileReplacedError(operation: string, path: string): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `SQLite ${operation} failed: the file ${JSON.stringify(path)} was deleted or replaced after ` +
      `this store opened it, so its leases are no longer the ones other processes see. Deleting ` +
      `or replacing the store file resets every fencing token; stop every holder, then open the ` +
      `store again`,
    { retryable: false },
  );
}

/** A `stat` of the file found nothing there (ENOENT, ENOTDIR): it was deleted or moved away. */
export function isFileGone(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
