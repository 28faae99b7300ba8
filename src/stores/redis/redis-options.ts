import { resolveOnWatchError, type WatchErrorHandler } from '../../core/watch-hub.js';
import { invalidArgument } from '../../core/errors.js';
import { checkInteger, checkKnownKeys, describe, optionKeys } from '../../core/options.js';

/** The key namespace, sharding and timeouts of a `RedisStore`. */
export interface RedisStoreOptions {
  /**
   * Start of every key and of the pub/sub channel: one namespace of leases. Letters, digits and
   * `_ : . / -`, at most 64 characters (no `{` `}`, which would change cluster hash slots).
   * @default 'leasehold:'
   */
  prefix?: string;
  /**
   * How many hash-tagged groups the resources are spread over. Every store sharing a prefix must
   * use the same number; the first store writes it to `<prefix>meta` and others that differ refuse
   * to open. More groups spread load over cluster masters; `list` and batches cost one call per group.
   * @default 1 on a single Redis, 16 on a Redis Cluster
   */
  shards?: number;
  /**
   * Deadline of every store call, in ms, after which it fails with `STORE_UNAVAILABLE` (a paused or
   * unreachable server never makes a call hang). A timed-out write may still land later.
   * @default 5000
   */
  commandTimeoutMs?: number;
  /**
   * Called when the connection that serves `watch` fails; it reconnects and resubscribes by itself.
   * @default emits a process warning
   */
  onWatchError?: WatchErrorHandler;
}

export const REDIS_DEFAULTS = Object.freeze({
  prefix: 'leasehold:',
  shards: 1,
  clusterShards: 16,
  commandTimeoutMs: 5000,
  connectTimeoutMs: 5000,
});

export interface ResolvedRedisOptions {
  readonly prefix: string;
  readonly shards: number;
  readonly commandTimeoutMs: number;
  readonly onWatchError: WatchErrorHandler;
}

const REDIS_KEYS = optionKeys<RedisStoreOptions>({
  prefix: true,
  shards: true,
  commandTimeoutMs: true,
  onWatchError: true,
});

const PREFIX = /^[A-Za-z0-9_:./-]{1,64}$/;

export function checkPrefix(value: unknown): string {
  if (typeof value !== 'string' || !PREFIX.test(value)) {
    throw invalidArgument(
      'prefix',
      `must be 1 to 64 characters from A-Z a-z 0-9 _ : . / -, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

export function resolveRedisOptions(
  options: RedisStoreOptions = {},
  isCluster = false,
): ResolvedRedisOptions {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('RedisStore options', options, REDIS_KEYS);
  const onWatchError = resolveOnWatchError(options.onWatchError);
  return {
    prefix: checkPrefix(options.prefix ?? REDIS_DEFAULTS.prefix),
    shards: checkCount(
      'shards',
      options.shards ?? (isCluster ? REDIS_DEFAULTS.clusterShards : REDIS_DEFAULTS.shards),
    ),
    commandTimeoutMs: checkInteger(
      'commandTimeoutMs',
      options.commandTimeoutMs ?? REDIS_DEFAULTS.commandTimeoutMs,
      1,
      600_000,
    ),
    onWatchError,
  };
}

function checkCount(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1024)
    throw invalidArgument(field, `must be an integer from 1 to 1024, got ${String(value)}`);
  return value;
}
