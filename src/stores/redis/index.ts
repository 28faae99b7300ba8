export { RedisStore } from './redis-store.js';
export type { RedisClient, RedisSubscriber } from './redis-driver.js';
export type { NodeRedisClient, NodeRedisSubscriber } from './redis-node.js';
export type { RedisStoreOptions } from './redis-options.js';
