import { ErrorCode, LeaseError } from '../../core/errors.js';

/** Reply errors that repeating the call cannot fix, with what to do about them. */
const PERMANENT: Readonly<Record<string, string>> = {
  NOAUTH: 'the server needs a password',
  WRONGPASS: 'wrong user name or password',
  NOPERM:
    'the Redis user needs keys ~<prefix>*, channel &<prefix>* and commands EVALSHA EVAL HMGET SUBSCRIBE',
  WRONGTYPE:
    'a key under this prefix holds data of another kind: is the prefix used by something else?',
};

/** Hints for errors that pass on their own. */
const TRANSIENT: Readonly<Record<string, string>> = {
  READONLY: 'connected to a replica: point the store at the primary',
  LOADING: 'the server is loading its data',
  CLUSTERDOWN: 'the cluster is down',
  MASTERDOWN: 'the replica lost its primary',
  BUSY: 'the server is busy running a script',
  OOM: 'the server is out of memory (its maxmemory policy must be noeviction)',
};

/**
 * Every ioredis and Redis error becomes `STORE_UNAVAILABLE`, mapped here once. Connection loss,
 * timeouts and failover replies are retryable; authentication, permission and data-shape errors are not.
 */
export function mapRedisError(error: unknown, operation: string): LeaseError {
  if (error instanceof LeaseError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const prefix = /^[A-Z]+/.exec(message)?.[0] ?? '';
  const permanent = PERMANENT[prefix];
  const scriptBug = prefix === 'ERR' && /script/i.test(message);
  const hint =
    permanent ??
    TRANSIENT[prefix] ??
    (/publish to the channel/.test(message)
      ? 'the Redis user needs the channel <prefix>released too, e.g. ACL &<prefix>*'
      : /^Command timed out/.test(message)
        ? 'no answer within commandTimeoutMs: the server may be paused, overloaded or unreachable; the call may still take effect'
        : undefined);
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `Redis ${operation} failed: ${message}${hint ? ` (${hint})` : ''}`,
    { cause: error, retryable: permanent === undefined && !scriptBug },
  );
}

/** Whether a Redis error is WRONGTYPE: the key holds another type than the command reads. */
export function isWrongType(error: unknown): boolean {
  return /^WRONGTYPE/.test(error instanceof Error ? error.message : String(error));
}

/** Whether the server does not know a script by its SHA1 (NOSCRIPT): send it whole with EVAL. */
export function isNoScript(error: unknown): boolean {
  return String((error as Error | null)?.message).startsWith('NOSCRIPT');
}

/**
 * A reply error refusing a command, not a lost connection: ERR unknown command (CONFIG disabled
 * or renamed), NOPERM (an ACL without it).
 */
export function isReplyRefusal(error: unknown): boolean {
  return /^(ERR|NOPERM)\b/.test(error instanceof Error ? error.message : String(error));
}
