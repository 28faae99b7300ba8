export { ZookeeperStore } from './zookeeper-store.js';
export type { ZookeeperStoreOptions } from './zookeeper-options.js';
