import { openStore, type LeaseStore } from '../../../src/index.js';
import { RedisServer, redisUnavailable } from '../../harness/redis-server.js';
import type { StoreFactory } from '../factory.js';

/** A private single Redis server; each namespace is a key prefix, opened through a store URL. */
export function redisFactory(): StoreFactory {
  let server: RedisServer | undefined;
  return {
    name: 'redis',
    durable: true,
    unavailable: redisUnavailable,
    setup: async () => {
      server = await RedisServer.start();
    },
    open: (namespace): Promise<LeaseStore> => openStore(`${server!.url}?prefix=${namespace}:`),
    teardown: async () => server?.stop(),
  };
}
