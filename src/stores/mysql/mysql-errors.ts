import { ErrorCode, LeaseError } from '../../core/errors.js';

/** Failures that a later call may not meet: the network, a restart, a lock conflict, a failover. */
const TRANSIENT = new Set([
  'LEASEHOLD_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_LOCK_DEADLOCK',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_SERVER_SHUTDOWN',
  'ER_NORMAL_SHUTDOWN',
  'ER_SHUTDOWN_COMPLETE',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_QUERY_INTERRUPTED',
  'ER_CONNECTION_KILLED',
  'ER_CLIENT_INTERACTION_TIMEOUT',
  'ER_NET_READ_INTERRUPTED',
  'ER_NET_WRITE_INTERRUPTED',
  'ER_OPTION_PREVENTS_STATEMENT', // read-only during a failover
  'ER_READ_ONLY_MODE',
  'ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION',
]);

/**
 * A BIGINT out of range (ER_DATA_OUT_OF_RANGE): what an acquire fails with on a record it must not
 * take (see `STOP` in mysql-ops.ts), having written nothing.
 */
export function isOutOfRange(error: unknown): boolean {
  return (error as DriverError | null)?.code === 'ER_DATA_OUT_OF_RANGE';
}

/** The table read is missing (ER_NO_SUCH_TABLE): not set up yet. */
export function isNoSuchTable(error: unknown): boolean {
  return (error as DriverError | null)?.code === 'ER_NO_SUCH_TABLE';
}

/**
 * The server did not understand the statement (ER_PARSE_ERROR): two statements sent in one over
 * a pool without `multipleStatements`, or a statement newer than the server.
 */
export function isParseError(error: unknown): boolean {
  return (error as DriverError | null)?.code === 'ER_PARSE_ERROR';
}

/** A refusal for want of a privilege (ER_ACCESS_DENIED_ERROR, ER_SPECIFIC_ACCESS_DENIED_ERROR, …). */
export function isAccessDenied(error: unknown): boolean {
  const code = (error as DriverError | null)?.code;
  return typeof code === 'string' && /ACCESS_DENIED/.test(code);
}

/**
 * What a migration step that already ran fails with (an upgrade cut short before its version was
 * written): the column it adds is there (ER_DUP_FIELDNAME).
 */
export function isAlreadyDone(error: unknown): boolean {
  return (error as DriverError | null)?.code === 'ER_DUP_FIELDNAME';
}

interface DriverError {
  code?: unknown;
  errno?: unknown;
  fatal?: unknown;
}

/**
 * Turns a mysql2 (or socket) error into a `LeaseError`: always `STORE_UNAVAILABLE`, retryable for
 * the network, restarts, lock conflicts and failovers; not for access, schema or syntax errors.
 * `where` names the server without its password.
 */
export function mapMysqlError(error: unknown, operation: string, where: string): LeaseError {
  if (error instanceof LeaseError) return error;
  const { code, fatal } = (error ?? {}) as DriverError;
  const name = typeof code === 'string' ? code : undefined;
  const message = error instanceof Error ? error.message : String(error);
  const retryable =
    (name !== undefined && TRANSIENT.has(name)) ||
    (fatal === true && !/^ER_(ACCESS|DBACCESS|BAD_DB|NOT_SUPPORTED_AUTH)/.test(name ?? ''));
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `MySQL ${operation} on ${where} failed${name ? ` (${name})` : ''}: ${message}`,
    { cause: error, retryable },
  );
}
