import { ErrorCode, LeaseError } from '../../core/errors.js';
import { loadIoredis, withDeadline, type RedisClient } from './redis-driver.js';
import { mapRedisError } from './redis-errors.js';
import type { RedisTarget } from './redis-url.js';

/**
 * Connects to what a URL names, failing with `STORE_UNAVAILABLE` within `connectTimeoutMs`.
 * Reconnects are quick (up to 1 s apart) because a lease store that is back should be used at
 * once; a command lost with its connection is retried once. The store bounds every call with its
 * own deadline (one timer for all of them), so the driver sets no timer per command.
 */
export async function connectRedis(target: RedisTarget): Promise<RedisClient> {
  const ioredis = await loadIoredis();
  const connection = {
    username: target.username,
    password: target.password,
    tls: target.tls ? { servername: target.nodes[0]!.host } : undefined,
    connectTimeout: target.connectTimeoutMs,
    maxRetriesPerRequest: 1,
    protocol: 2, // RESP2 works with every Redis from 5 on; `watch` uses its own connection anyway
  };
  const client = target.cluster
    ? new ioredis.Cluster([...target.nodes], {
        lazyConnect: true,
        clusterRetryStrategy: (times: number) => Math.min(times * 100, 1000),
        slotsRefreshTimeout: Math.min(target.connectTimeoutMs, 2000),
        redisOptions: connection,
      })
    : target.sentinel
      ? new ioredis.Redis({
          ...connection,
          tls: target.tls ? {} : undefined,
          sentinels: [...target.nodes],
          name: target.sentinel,
          enableTLSForSentinelMode: target.tls,
          // Told of a promotion by the Sentinels, the client reconnects to the new primary at
          // once instead of writing to the old one until its connection breaks.
          failoverDetector: true,
          sentinelCommandTimeout: Math.min(target.connectTimeoutMs, 2000),
          sentinelRetryStrategy: (times: number) => Math.min(times * 100, 1000),
          db: target.db,
          lazyConnect: true,
          retryStrategy: (times: number) => Math.min(times * 50, 1000),
        })
      : new ioredis.Redis({
          ...connection,
          ...target.nodes[0],
          db: target.db,
          lazyConnect: true,
          retryStrategy: (times: number) => Math.min(times * 50, 1000),
        });
  // Command errors reach their callers; these events would otherwise be printed by ioredis.
  let lastError: Error | undefined;
  client.on('error', (error) => {
    lastError = error;
  });
  try {
    await withDeadline(client.connect(), target.connectTimeoutMs, 'connect');
    return client;
  } catch (error) {
    client.disconnect();
    const cause = lastError ?? error;
    const mapped = mapRedisError(cause, 'connect');
    const detail =
      cause instanceof LeaseError
        ? `no answer within ${target.connectTimeoutMs} ms (is it paused or unreachable?)`
        : (sentinelProblem(target, mapped.message) ??
          mapped.message.replace(/^Redis connect failed: /, ''));
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `cannot connect to Redis at ${target.redacted}: ${detail}`,
      { cause, retryable: mapped.retryable },
    );
  }
}

/**
 * What went wrong finding the primary through Sentinels, in words of this store rather than the
 * driver's (whose message says it is retrying, which it no longer is); `undefined` otherwise.
 */
function sentinelProblem(target: RedisTarget, message: string): string | undefined {
  if (target.sentinel === undefined) return undefined;
  const last = /All sentinels are unreachable\..*?Last error: (.*)$/s.exec(message)?.[1];
  if (last === undefined) return undefined;
  const group = JSON.stringify(target.sentinel);
  if (/No such master with that name/i.test(last))
    return `the Sentinels watch no master group ${group} (check sentinel=)`;
  return `no Sentinel answered with the primary of master group ${group} (last error: ${last})`;
}
