import type { DataRevisions } from './etcd-data-revisions.js';
import type { EtcdKeys } from './etcd-keys.js';
import type { OwnerLeases } from './etcd-leases.js';
import type { EtcdRpc } from './etcd-rpc.js';

/** What the store's operations share: the calls to etcd, the key layout, the owners' etcd leases, the data revisions. */
export interface EtcdContext {
  readonly rpc: EtcdRpc;
  readonly keys: EtcdKeys;
  readonly leases: OwnerLeases;
  /** Where each held resource's data key was last seen: what data writes are conditioned on. */
  readonly dataRevisions: DataRevisions;
  /** The server's `--max-txn-ops`, as the store's options say. */
  readonly maxTxnOps: number;
}
