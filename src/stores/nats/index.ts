export { NatsStore } from './nats-store.js';
export type { NatsConnectionLike, NatsKv, NatsKvEntry } from './nats-driver.js';
export type { NatsStoreOptions } from './nats-options.js';
