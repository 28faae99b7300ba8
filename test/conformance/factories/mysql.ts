import type { StoreFactory } from '../factory.js';

// Placeholder until the mysql adapter lands.
export function mysqlFactory(): StoreFactory {
  const fail = async (): Promise<never> => {
    throw new Error('mysql adapter not built yet');
  };
  return {
    name: 'mysql',
    durable: true,
    unavailable: () => 'mysql adapter not built yet',
    setup: fail,
    open: fail,
    teardown: async () => {},
  };
}
