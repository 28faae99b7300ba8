export { ZookeeperStore } from './zookeeper-store.js';
export type { ZookeeperStoreOptions } from './zookeeper-options.js';
export type { ZookeeperUnwatch } from './zookeeper-watch.js';
