import type { EtcdKeys } from './etcd-keys.js';
import type { OwnerLeases } from './etcd-leases.js';
import type { EtcdRpc } from './etcd-rpc.js';

/** What the store's operations share: the calls to etcd, the key layout, the owners' etcd leases. */
export interface EtcdContext {
  readonly rpc: EtcdRpc;
  readonly keys: EtcdKeys;
  readonly leases: OwnerLeases;
  /** The server's `--max-txn-ops`, as the store's options say. */
  readonly maxTxnOps: number;
}
