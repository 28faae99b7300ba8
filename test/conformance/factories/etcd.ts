import type { StoreFactory } from '../factory.js';

// Placeholder until the etcd adapter lands.
export function etcdFactory(): StoreFactory {
  const fail = async (): Promise<never> => {
    throw new Error('etcd adapter not built yet');
  };
  return {
    name: 'etcd',
    durable: true,
    unavailable: () => 'etcd adapter not built yet',
    setup: fail,
    open: fail,
    teardown: async () => {},
  };
}
