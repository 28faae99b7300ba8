import { withDeadline as deadline } from '../../core/deadline.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Script } from './redis-scripts.js';

export type RedisArg = string | number;

/** The part of an ioredis `Redis` or `Cluster` this store uses. */
export interface RedisClient {
  evalsha(sha: string, numKeys: number, ...args: RedisArg[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: RedisArg[]): Promise<unknown>;
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
  /** A new connection with the same options: it serves `watch` (a subscribed connection does nothing else). */
  duplicate(): RedisSubscriber;
  quit(): Promise<unknown>;
  disconnect(): void;
  /** `true` on an ioredis `Cluster`. */
  readonly isCluster?: boolean;
}

/** The part of a duplicated ioredis connection that `watch` uses. */
export interface RedisSubscriber {
  subscribe(channel: string): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  disconnect(): void;
}

/**
 * Most leases one script call handles: larger batches are split, which keeps each call's
 * arguments within what a JavaScript call can spread and each script's run on the server short.
 */
export const MAX_SCRIPT_LEASES = 10_000;

/**
 * Most resources one `acquireMany` script call takes. An acquire writes a record and the index
 * entry of each resource; 1,000 keep one call to a few milliseconds of server time (about 5 ms
 * measured on a busy 2-core machine, 2 ms when every resource is held), so a big batch never
 * blocks Redis for long, and a batch of 1,000 on one shard is still one call.
 */
export const MAX_ACQUIRE_KEYS = 1000;

/** EVALSHA, and EVAL (which also caches the script on that node) when the server does not know it yet. */
export async function runScript(
  client: RedisClient,
  script: Script,
  keys: string[],
  args: RedisArg[],
): Promise<unknown> {
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!String((error as Error | null)?.message).startsWith('NOSCRIPT')) throw error;
    return client.eval(script.lua, keys.length, ...keys, ...args);
  }
}

/**
 * `promise`, or `STORE_UNAVAILABLE` after `ms`, whichever comes first. The driver has its own
 * timeouts; this one also bounds queues it does not (a Cluster waiting for its slots, a client the
 * caller configured without a command timeout). A write that timed out may still land later.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, operation: string): Promise<T> {
  return deadline(
    promise,
    ms,
    () =>
      new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `Redis ${operation} failed: no answer within ${ms} ms (the server may be paused, overloaded or unreachable; the call may still take effect)`,
      ),
  );
}
