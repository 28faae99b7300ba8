import { createClient } from 'redis';
import { RedisStore, type LeaseStore } from '../../../src/index.js';
import { RedisServer, redisUnavailable } from '../../harness/redis-server.js';
import type { StoreFactory } from '../factory.js';

/**
 * A private single Redis server reached through node-redis (`createClient()` from the `redis`
 * package) instead of ioredis: one connected client per store, each namespace a key prefix.
 */
export function redisNodeFactory(): StoreFactory {
  let server: RedisServer | undefined;
  const clients: ReturnType<typeof createClient>[] = [];
  return {
    name: 'redis-node',
    durable: true,
    unavailable: redisUnavailable,
    setup: async () => {
      server = await RedisServer.start();
    },
    open: async (namespace, options): Promise<LeaseStore> => {
      const client = createClient({ url: server!.url });
      client.on('error', () => {}); // failures reach the store's calls; the suite keeps the server up
      await client.connect();
      clients.push(client);
      return RedisStore.open(client, {
        prefix: `${namespace}:`,
        commandTimeoutMs: options?.deadlineMs,
      });
    },
    watchEvents: ['released'],
    pause: () => server!.pause(),
    resume: () => server?.resume(),
    teardown: async () => {
      await Promise.allSettled(clients.splice(0).map((client) => client.close()));
      await server?.stop();
    },
  };
}
