import { ErrorCode, LeaseError } from '../../core/errors.js';

/** JetStream's error for a conditional write whose expected revision was not the key's last. */
const WRONG_LAST_SEQUENCE = 10071;

interface DriverError {
  name?: unknown;
  code?: unknown;
  status?: unknown;
  message?: unknown;
  cause?: unknown;
}

function fields(error: unknown): DriverError {
  return typeof error === 'object' && error !== null ? (error as DriverError) : {};
}

/**
 * A conditional write refused because the key moved on since it was read: the answer "someone
 * else wrote first", never an error. The server says 400 "wrong last sequence".
 */
export function isConflict(error: unknown): boolean {
  const e = fields(error);
  return (
    e.code === WRONG_LAST_SEQUENCE ||
    (e.status === 400 && /wrong last sequence/i.test(String(e.message)))
  );
}

/**
 * The server refused a publish (`-ERR Permissions Violation for Publish`), as the connection's
 * status events report it, naming the subject.
 */
export function isPublishRefusal(error: unknown): error is Error & { subject: string } {
  const e = error as { name?: unknown; operation?: unknown; subject?: unknown } | undefined;
  return (
    e?.name === 'PermissionViolationError' &&
    e.operation === 'publish' &&
    typeof e.subject === 'string'
  );
}

/**
 * The server refused to create a bucket's stream because one is there already: created by
 * another process or store at the same moment ("subjects overlap with an existing stream", or the
 * name already in use with another configuration).
 */
export function isStreamTaken(error: unknown): boolean {
  return /subjects overlap|already in use/i.test(String((error as Error | null)?.message));
}

/** Errors that repeating the call cannot fix, by driver error name, with what to do. */
const PERMANENT: Readonly<Record<string, string>> = {
  AuthorizationError: 'the server refused the credentials',
  UserAuthenticationExpiredError: 'the credentials expired',
  PermissionViolationError:
    'the NATS user needs publish and subscribe permissions on $JS.API.> and $KV.<bucket>.>',
  ClosedConnectionError: 'the NATS connection was closed',
  DrainingConnectionError: 'the NATS connection is draining',
  InvalidArgumentError: 'the driver refused an argument',
};

/** Hints for failures that pass on their own. */
const TRANSIENT: Readonly<Record<string, string>> = {
  TimeoutError:
    'no answer in time: the server may be paused, overloaded or unreachable, and a write may still take effect',
  NoResponders:
    'no JetStream answered: is nats-server running with -js, and has it finished starting?',
  ConnectionError: 'the server is unreachable',
};

/** The driver error's name, looking through a `RequestError` to its cause. */
function nameOf(error: unknown): string {
  const e = fields(error);
  const name = typeof e.name === 'string' ? e.name : '';
  if (name === 'RequestError' && e.cause !== undefined) return nameOf(e.cause) || name;
  return name;
}

/**
 * Every NATS error becomes `STORE_UNAVAILABLE`, mapped here once. Timeouts, lost connections and
 * a JetStream still starting are retryable; credentials, permissions, a closed connection and a
 * missing bucket are not. Messages never hold the URL (the credentials are passed apart from it).
 */
export function mapNatsError(error: unknown, operation: string, bucket: string): LeaseError {
  if (error instanceof LeaseError) return error;
  const e = fields(error);
  const name = nameOf(error);
  const message = error instanceof Error ? error.message : String(error);
  const prefix = `NATS KV ${operation} on bucket "${bucket}" failed`;
  if (name === 'StreamNotFoundError' || /stream not found/i.test(message)) {
    return new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `${prefix}: the bucket does not exist; create it with ?createBucket=true (file storage, no max age)`,
      { cause: error, retryable: false },
    );
  }
  const permanent = PERMANENT[name];
  const hint = permanent ?? TRANSIENT[name];
  const status = typeof e.status === 'number' ? ` (${e.status})` : '';
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `${prefix}: ${message}${status}${hint && !message.includes(hint) ? ` (${hint})` : ''}`,
    { cause: error, retryable: permanent === undefined },
  );
}

/** A call that got no answer within `ms`: it may still take effect. */
export function noAnswer(operation: string, bucket: string, ms: number): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `NATS KV ${operation} on bucket "${bucket}" failed: no answer within ${ms} ms (is the server paused or unreachable? a write may still take effect)`,
  );
}
