import type { StoreOpenOptions, StoreUrl } from '../../core/store-url.js';
import { parseRedisUrl } from './redis-url.js';
import { RedisStore } from './redis-store.js';

/**
 * `redis://[user:password@]host[:port][/db]` or `rediss://…` (TLS), with
 * `?prefix=leasehold:&shards=&connectTimeoutMs=5000&commandTimeoutMs=5000&cluster=`;
 * `cluster=yes` (the host is a seed) or `cluster=host:port,host:port` (more seeds) for Redis Cluster.
 * The server's clock judges expiry and there is no table: `options` changes nothing.
 */
export async function openRedis(
  url: StoreUrl,
  _options: StoreOpenOptions = {},
): Promise<RedisStore> {
  return RedisStore.connect(parseRedisUrl(url));
}
