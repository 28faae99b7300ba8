import { ErrorCode, LeaseError } from '../../core/errors.js';

/** Driver errors that repeating the call cannot fix, by etcd3 error class, with what to do. */
const PERMANENT_CLASSES: Readonly<Record<string, string>> = {
  EtcdPermissionDeniedError:
    'the etcd user needs read and write access to the key prefix and permission to grant leases',
  EtcdAuthenticationFailedError: 'wrong user name or password',
  GRPCUnauthenticatedError: 'the server needs a user name and password',
  EtcdInvalidAuthTokenError: 'the auth token was refused',
  ClientClosedError: 'the etcd client was closed',
};

/** Server refusals of the request's shape, which the same call would meet again. */
const PERMANENT_MESSAGES: readonly (readonly [RegExp, string])[] = [
  [/too many operations in txn request/, "lower maxTxnOps to the server's --max-txn-ops"],
  [/request is too large/, "one batch exceeds the server's --max-request-bytes: lower maxTxnOps"],
];

/** Hints for failures that pass on their own. */
const TRANSIENT_CLASSES: Readonly<Record<string, string>> = {
  GRPCDeadlineExceededError:
    'no answer within the deadline: the server may be paused, overloaded or unreachable, and a write may still take effect',
  GRPCUnavailableError: 'the server is unreachable',
  EtcdLeaseInvalidError: 'the etcd lease lapsed',
};

/**
 * Every `etcd3` and etcd error becomes `STORE_UNAVAILABLE`, mapped here once. Transport failures,
 * deadlines, leader elections and lost leases are retryable; authentication, permission and
 * request-shape errors are not.
 */
export function mapEtcdError(error: unknown, operation: string): LeaseError {
  if (error instanceof LeaseError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const kind = (error as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  const name = typeof kind === 'string' ? kind : '';
  const permanent =
    PERMANENT_CLASSES[name] ?? PERMANENT_MESSAGES.find(([pattern]) => pattern.test(message))?.[1];
  const hint = permanent ?? TRANSIENT_CLASSES[name];
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `etcd ${operation} failed: ${message}${hint ? ` (${hint})` : ''}`,
    { cause: error, retryable: permanent === undefined },
  );
}

/** The server says the lease named in a put no longer exists. */
export function isLeaseNotFound(error: unknown): boolean {
  const name = (error as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  return (
    name === 'EtcdLeaseInvalidError' ||
    (error instanceof Error && error.message.includes('requested lease not found'))
  );
}

/**
 * The server refused a transaction as a whole, before any of it took effect, for something one of
 * its parts carries: a lease that no longer exists, or too many operations or bytes. Each part
 * alone may fare differently.
 */
export function refusedAsAWhole(error: unknown): boolean {
  if (isLeaseNotFound(error)) return true;
  const message = error instanceof Error ? error.message : '';
  return PERMANENT_MESSAGES.some(([pattern]) => pattern.test(message));
}

/**
 * gRPC UNAVAILABLE: the endpoint could not be reached (etcd3 names the class; a keep-alive
 * stream reports the bare gRPC error with its code).
 */
export function isUnreachable(error: unknown): boolean {
  const { constructor: kind, code } = (error ?? {}) as {
    constructor?: { name?: unknown };
    code?: unknown;
  };
  return kind?.name === 'GRPCUnavailableError' || code === 14;
}

/**
 * Whether gRPC refused an answer for being over the client's receive limit ("Received message
 * larger than max"). Not every RESOURCE_EXHAUSTED: etcd's "too many requests" is one too, and
 * fewer keys a page would not help it.
 */
export function isTooLarge(error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && /larger than max/i.test(message);
}

/** The etcd user may not make this call (a permission-denied error of etcd3 or of gRPC). */
export function isPermissionDenied(error: unknown): boolean {
  const name = (error as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  return name === 'EtcdPermissionDeniedError' || name === 'GRPCPermissionDeniedError';
}
