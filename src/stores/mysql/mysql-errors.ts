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
