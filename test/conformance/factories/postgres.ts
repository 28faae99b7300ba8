import type { StoreFactory } from '../factory.js';

// Placeholder until the postgres adapter lands.
export function postgresFactory(): StoreFactory {
  const fail = async (): Promise<never> => {
    throw new Error('postgres adapter not built yet');
  };
  return {
    name: 'postgres',
    durable: true,
    unavailable: () => 'postgres adapter not built yet',
    setup: fail,
    open: fail,
    teardown: async () => {},
  };
}
