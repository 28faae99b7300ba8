import type { StoreFactory } from '../factory.js';

// Placeholder until the dynamodb adapter lands.
export function dynamodbFactory(): StoreFactory {
  const fail = async (): Promise<never> => {
    throw new Error('dynamodb adapter not built yet');
  };
  return {
    name: 'dynamodb',
    durable: true,
    unavailable: () => 'dynamodb adapter not built yet',
    setup: fail,
    open: fail,
    teardown: async () => {},
  };
}
