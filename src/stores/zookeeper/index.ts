import type { Unwatch } from '../../core/store.js';
export { ZookeeperStore } from './zookeeper-store.js';
export type { ZookeeperStoreOptions } from './zookeeper-options.js';

/**
 * The same type as `Unwatch`, which every store's `watch` returns.
 * @deprecated Use `Unwatch`.
 */
export type ZookeeperUnwatch = Unwatch;
