import { ErrorCode, LeaseError } from '../../core/errors.js';

/**
 * SQLSTATE classes worth retrying: the server was busy, shutting down, out of resources or lost
 * the connection, or a statement was cancelled (our statement_timeout) or chose a deadlock victim.
 */
const RETRYABLE_CLASSES = new Set(['08', '40', '53', '55', '57', '58', 'XX']);

/** Exceptions to the classes: a dropped database is final; a read-only server may be mid-failover. */
const FINAL_STATES = new Set(['57P04']);
const RETRYABLE_STATES = new Set(['25006']);

/**
 * Turns anything node-postgres throws into a `LeaseError`, once, at the store boundary.
 * Errors with a SQLSTATE come from the server; the rest (refused or reset connections, connect and
 * read timeouts, a pool that was ended) are transport failures and worth retrying.
 */
export function mapPostgresError(error: unknown, operation: string, label: string): LeaseError {
  if (error instanceof LeaseError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const sqlState = sqlStateOf(error);
  if (sqlState === undefined) {
    const code = (error as { code?: unknown } | null)?.code;
    const detail = typeof code === 'string' && !message.includes(code) ? `${code}: ` : '';
    return new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `${label} ${operation} failed: ${detail}${message}`,
      { cause: error, retryable: true },
    );
  }
  const retryable =
    RETRYABLE_STATES.has(sqlState) ||
    (RETRYABLE_CLASSES.has(sqlState.slice(0, 2)) && !FINAL_STATES.has(sqlState));
  const what = sqlState === '57014' ? ' (statement timeout)' : '';
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `${label} ${operation} failed${what}: ${message} [SQLSTATE ${sqlState}]`,
    { cause: error, retryable },
  );
}

/**
 * The division by zero (SQLSTATE 22012) the `acquireAll` statement raises, and nothing else in
 * it can, when a member was taken after its snapshot: the statement failed whole, writing
 * nothing, and the answer is a refusal. The connection stays usable (no transaction is left open).
 */
export function isGroupRefusal(error: unknown): boolean {
  return sqlStateOf(error) === '22012';
}

/**
 * The NOT NULL violation on the token column (SQLSTATE 23502) an acquire statement raises, and
 * nothing else in it can, when a record it would take is not one leasehold writes (see
 * `nextToken` in postgres-ops.ts): the statement failed whole, writing nothing.
 */
export function isInvalidRefusal(error: unknown): boolean {
  return sqlStateOf(error) === '23502' && (error as { column?: unknown }).column === 'token';
}

/** The SQLSTATE of an error the server sent (node-postgres puts it in `code`, beside `severity`). */
function sqlStateOf(error: unknown): string | undefined {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown };
  return typeof severity === 'string' && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)
    ? code
    : undefined;
}

/**
 * The read of the schema version failed for want of the meta table or its schema (SQLSTATE 42P01,
 * undefined table; 3F000, undefined schema): the table was never set up.
 */
export function isMissingRelation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '42P01' || code === '3F000';
}

/** The role may not read what was asked (SQLSTATE 42501, insufficient_privilege). */
export function isInsufficientPrivilege(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '42501';
}
