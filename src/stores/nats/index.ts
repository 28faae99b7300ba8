import type { Unwatch } from '../../core/store.js';
export { NatsStore } from './nats-store.js';
export type { NatsConnectionLike, NatsKv, NatsKvEntry } from './nats-driver.js';
export type { NatsStoreOptions } from './nats-options.js';

/**
 * The same type as `Unwatch`, which every store's `watch` returns.
 * @deprecated Use `Unwatch`.
 */
export type NatsUnwatch = Unwatch;
