import type { Unwatch } from '../../core/store.js';
export { EtcdStore } from './etcd-store.js';
export type {
  EtcdClient,
  EtcdWatcher,
  EtcdWatchBuilder,
  EtcdKeepAliveStream,
} from './etcd-driver.js';
export type { EtcdStoreOptions } from './etcd-options.js';

/**
 * The same type as `Unwatch`, which every store's `watch` returns.
 * @deprecated Use `Unwatch`.
 */
export type EtcdUnwatch = Unwatch;
