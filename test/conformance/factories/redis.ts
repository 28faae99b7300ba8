import type { StoreFactory } from '../factory.js';

// Placeholder until the redis adapter lands.
export function redisFactory(): StoreFactory {
  const fail = async (): Promise<never> => {
    throw new Error('redis adapter not built yet');
  };
  return {
    name: 'redis',
    durable: true,
    unavailable: () => 'redis adapter not built yet',
    setup: fail,
    open: fail,
    teardown: async () => {},
  };
}
