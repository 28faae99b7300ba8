import { ErrorCode, LeaseError } from '../../core/errors.js';
import { invalidRecord } from '../../core/record-check.js';
import { ZK_CODE, type ZkException } from './zookeeper-driver.js';
import type { ResourcePaths } from './zookeeper-paths.js';

/** Failures that repeating the call cannot fix, with what to do about them. */
const PERMANENT: Readonly<Record<number, string>> = {
  [ZK_CODE.NO_AUTH]: 'the session may not read or write the znodes under the store path (ACL)',
  [ZK_CODE.AUTH_FAILED]: 'ZooKeeper refused the credentials',
  [ZK_CODE.INVALID_ACL]: 'ZooKeeper refused the ACL',
};

/** Hints for failures that pass on their own. */
const TRANSIENT: Readonly<Record<number, string>> = {
  [ZK_CODE.CONNECTION_LOSS]:
    'the connection to ZooKeeper was lost (a write sent before may still take effect)',
  [ZK_CODE.OPERATION_TIMEOUT]: 'ZooKeeper did not answer in time',
  [ZK_CODE.SESSION_EXPIRED]: 'the ZooKeeper session expired (its leases ended with it)',
};

/** The ZooKeeper error code of a driver error, or `undefined` when it is not one. */
export function zkCode(error: unknown): number | undefined {
  const get = (error as Partial<ZkException> | null)?.getCode;
  return typeof get === 'function' ? get.call(error) : undefined;
}

/**
 * Every driver and ZooKeeper error becomes `STORE_UNAVAILABLE`, mapped here once. Connection
 * loss, timeouts and session expiry are retryable; ACL and authentication failures and anything
 * unexpected from the server (a znode of the layout missing, a malformed record) are not.
 * "Someone else holds it" never reaches here: the operations answer it with `null` / `false`.
 */
export function mapZookeeperError(error: unknown, operation: string): LeaseError {
  if (error instanceof LeaseError) return error;
  const code = zkCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if (code !== undefined && PERMANENT[code] !== undefined) {
    return new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `zookeeper ${operation} failed: ${message}: ${PERMANENT[code]}`,
      { cause: error, retryable: false },
    );
  }
  const hint = code === undefined ? undefined : TRANSIENT[code];
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `zookeeper ${operation} failed: ${message}${hint ? `: ${hint}` : ''}`,
    { cause: error, retryable: code === undefined || hint !== undefined },
  );
}

/** A ZooKeeper answer this store's layout rules out: someone else wrote under the store path. */
export function foreignZnode(path: string, problem: string): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `zookeeper znode ${JSON.stringify(path)} ${problem}: is the store path used by something else?`,
    { retryable: false },
  );
}

/** A record znode without its token znode: made by hand (leasehold creates both in one `multi`). */
export function noTokenZnode(p: ResourcePaths): LeaseError {
  return invalidRecord(p.resource, 'its record znode has no token znode');
}

/**
 * The error of an acquire `multi` refused other than by a conflict, at `op` of the resource's
 * own operations (`acquireOps` when `free`): counting the token of a record that has no token
 * znode (`NO_NODE` at operation 1) is `RECORD_INVALID`, nothing applied; anything else says
 * someone else writes under the store path.
 */
export function refusedAcquire(
  p: ResourcePaths,
  free: boolean,
  op: number,
  code: number,
): LeaseError {
  if (free && op === 1 && code === ZK_CODE.NO_NODE) return noTokenZnode(p);
  return foreignZnode(
    op === 0 && !free ? p.record : p.hold,
    `refused an acquire (operation ${op}, ZooKeeper error ${code})`,
  );
}

/**
 * How the operations of a renew or release were refused, by their offset: the grant is over
 * (`over`: the hold is gone), or the record was written since the version the operations were
 * conditioned on (`changed`: by a grant, a renewal or a release, which a read tells apart).
 */
export function refusalOf(op: number, code: number): 'over' | 'changed' {
  if (op === 0 && code === ZK_CODE.NO_NODE) return 'over';
  return 'changed';
}
