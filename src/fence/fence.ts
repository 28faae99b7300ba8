import { ErrorCode, invalidArgument, LeaseError } from '../core/errors.js';
import { checkIdentifier, checkResource, checkToken, describe } from '../core/options.js';
import { permitResource } from '../core/permits.js';

/** What a fenced write came to: the caller's value when the token was current, nothing when stale. */
export type FenceResult<T> =
  | {
      /** The token was current: the write ran and committed. */
      readonly accepted: true;
      /** What the caller's write returned. */
      readonly value: T;
    }
  | {
      /** A higher token was already recorded: the write did not run. */
      readonly accepted: false;
    };

/** Where a fence keeps the highest token seen per resource. */
export interface FenceOptions {
  /** Table holding the highest token seen per resource. @default 'leasehold_fence' */
  table?: string;
}

/** The defaults of {@link FenceOptions}. */
export const FENCE_DEFAULTS = Object.freeze({
  /** The fence table's name. */
  table: 'leasehold_fence',
});

export function resolveFenceOptions(options: FenceOptions | undefined): { table: string } {
  if (options !== undefined && (typeof options !== 'object' || options === null))
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  const table = options?.table ?? FENCE_DEFAULTS.table;
  return { table: checkIdentifier('table', table, 63) };
}

/** Checks the arguments of `write`: the same resource rules as the lease store, a positive safe token. */
export function checkWrite(resource: unknown, token: unknown, fn: unknown): void {
  checkResource(resource);
  checkToken(token);
  if (typeof fn !== 'function')
    throw invalidArgument('fn', `must be a function, got ${describe(fn)}`);
}

/** A token read back from a driver that may hand out a number, a bigint or a numeric string. */
export function tokenOf(value: unknown): number {
  return typeof value === 'number' ? value : Number(value);
}

/** The fence's own statements failed (not the caller's write): one error code, the cause kept. */
export function fenceError(error: unknown, what: string): LeaseError {
  if (error instanceof LeaseError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const detail = typeof code === 'string' && !message.includes(code) ? ` [${code}]` : '';
  return new LeaseError(ErrorCode.STORE_UNAVAILABLE, `${what} failed: ${message}${detail}`, {
    cause: error,
  });
}

/**
 * The lease a fenced write is made under: a `HeldLease` (or a store's `Lease`) fits. A counting
 * lease's permits each have their own tokens, so the fence keeps the highest token per permit:
 * permit 0 under the name itself, permit i under the permit's record key (`lease.key`).
 */
export interface FencedLease {
  /** The resource (for a permit of a counting lease, the name the permits share). */
  readonly resource: string;
  /** The lease's fencing token. */
  readonly token: number;
  /** The permit of a counting lease (0 … N−1). @default 0 */
  readonly permit?: number;
}

/** The fence's key and token for `lease`: the permit's record key, so permits never fence each other. */
export function fenceKey(lease: unknown): { resource: string; token: number } {
  if (typeof lease !== 'object' || lease === null)
    throw invalidArgument('lease', `must be a lease (resource and token), got ${describe(lease)}`);
  const { resource, token, permit } = lease as Partial<FencedLease>;
  checkResource(resource);
  checkToken(token);
  if (permit !== undefined && (!Number.isSafeInteger(permit) || permit < 0))
    throw invalidArgument(
      'lease.permit',
      `must be a non-negative safe integer, got ${describe(permit)}`,
    );
  const key = permitResource(resource as string, permit ?? 0);
  checkResource(key);
  return { resource: key, token: token as number };
}

/**
 * The arguments of `write(resource, token, fn)` or `write(lease, fn)`, checked: the resource the
 * fence keys on, the token and the caller's function.
 */
export function writeArgs<F>(
  first: unknown,
  second: unknown,
  third: unknown,
): { resource: string; token: number; fn: F } {
  if (typeof first === 'string') {
    checkWrite(first, second, third);
    return { resource: first, token: second as number, fn: third as F };
  }
  const { resource, token } = fenceKey(first);
  checkWrite(resource, token, second);
  return { resource, token, fn: second as F };
}
