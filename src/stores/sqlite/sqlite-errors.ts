import { ErrorCode, LeaseError } from '../../core/errors.js';

/** better-sqlite3 reports extended codes (`SQLITE_BUSY_SNAPSHOT`, `SQLITE_LOCKED_SHAREDCACHE`, …). */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)(_|$)/.test(code);
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
