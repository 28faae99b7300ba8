import { openStore, type LeaseStore } from '../../../src/index.js';
import { EtcdCluster, etcdUnavailable } from '../../harness/etcd-server.js';
import type { StoreFactory } from '../factory.js';

/**
 * A private single-member etcd with fast raft timings (its minimum lease TTL is then 1 s);
 * each namespace is a key prefix, opened through a store URL. etcd lease TTLs are whole seconds,
 * so the suite's expiry tests use 1 s. The member can be paused and restarted (SIGKILL, then a start on
 * the same folder and ports).
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
    open: (namespace, options): Promise<LeaseStore> =>
      openStore(`${cluster!.url}?prefix=/${namespace}/&timeoutMs=${options?.deadlineMs ?? 3000}`),
    watchEvents: ['acquired', 'released', 'expired'],
    pause: () => cluster!.members[0]!.pause(),
    resume: () => cluster?.members[0]!.resume(),
    restart: () => cluster!.members[0]!.restart(),
    unreachableUrl: (port, deadlineMs) =>
      `etcd://lh:s3cret@127.0.0.1:${port}?timeoutMs=${deadlineMs}`,
    teardown: async () => cluster?.stop(),
  };
}
