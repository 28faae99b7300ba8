export { RedisStore } from './redis-store.js';
export type {
  NodeRedisClient,
  NodeRedisSubscriber,
  RedisClient,
  RedisSubscriber,
} from './redis-driver.js';
export type { RedisStoreOptions } from './redis-options.js';
