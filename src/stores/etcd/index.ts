export { EtcdStore } from './etcd-store.js';
export type {
  EtcdClient,
  EtcdWatcher,
  EtcdWatchBuilder,
  EtcdKeepAliveStream,
} from './etcd-driver.js';
export type { EtcdStoreOptions } from './etcd-options.js';
