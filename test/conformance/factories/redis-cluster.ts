import { openStore, type LeaseStore } from '../../../src/index.js';
import { RedisCluster, redisUnavailable } from '../../harness/redis-server.js';
import type { StoreFactory } from '../factory.js';

/** Three Redis Cluster masters; leases are spread over 16 hash-tagged shards. */
export function redisClusterFactory(): StoreFactory {
  let cluster: RedisCluster | undefined;
  return {
    name: 'redis-cluster',
    durable: true,
    unavailable: redisUnavailable,
    setup: async () => {
      cluster = await RedisCluster.start();
    },
    open: (namespace, options): Promise<LeaseStore> => {
      const [first, ...rest] = cluster!.seeds;
      const ms = options?.deadlineMs;
      const deadline = ms === undefined ? '' : `&commandTimeoutMs=${ms}&connectTimeoutMs=${ms}`;
      return openStore(
        `redis://${first}?cluster=${rest.join(',')}&prefix=${namespace}:${deadline}`,
      );
    },
    watchEvents: ['released'],
    teardown: async () => cluster?.stop(),
  };
}
