import { openStore, type LeaseStore } from '../../../src/index.js';
import { RedisServer, redisUnavailable } from '../../harness/redis-server.js';
import type { StoreFactory } from '../factory.js';

/**
 * A private single Redis server; each namespace is a key prefix, opened through a store URL. A
 * call's deadline is its command timeout and the connect timeout; the server can be paused. It
 * keeps no data across a restart (no persistence), so it offers none.
 */
export function redisFactory(): StoreFactory {
  let server: RedisServer | undefined;
  return {
    name: 'redis',
    durable: true,
    unavailable: redisUnavailable,
    setup: async () => {
      server = await RedisServer.start();
    },
    open: (namespace, options): Promise<LeaseStore> => {
      const ms = options?.deadlineMs;
      const deadline = ms === undefined ? '' : `&commandTimeoutMs=${ms}&connectTimeoutMs=${ms}`;
      return openStore(`${server!.url}?prefix=${namespace}:${deadline}`);
    },
    watchEvents: ['released'],
    pause: () => server!.pause(),
    resume: () => server?.resume(),
    unreachableUrl: (port, deadlineMs) =>
      `redis://lh:s3cret@127.0.0.1:${port}?connectTimeoutMs=${deadlineMs}`,
    teardown: async () => server?.stop(),
  };
}
