import { openStore, type LeaseStore } from '../../../src/index.js';
import { EtcdCluster, etcdUnavailable } from '../../harness/etcd-server.js';
import type { StoreFactory } from '../factory.js';

/**
 * A private single-member etcd with fast raft timings (its minimum lease TTL is then 1 s);
 * each namespace is a key prefix, opened through a store URL. etcd lease TTLs are whole seconds,
 * so the suite's expiry tests use 1 s.
 */
export function etcdFactory(): StoreFactory {
  let cluster: EtcdCluster | undefined;
  return {
    name: 'etcd',
    durable: true,
    shortTtlMs: 1000,
    unavailable: etcdUnavailable,
    setup: async () => {
      cluster = await EtcdCluster.start();
    },
    open: (namespace): Promise<LeaseStore> =>
      openStore(`${cluster!.url}?prefix=/${namespace}/&timeoutMs=3000`),
    teardown: async () => cluster?.stop(),
  };
}
