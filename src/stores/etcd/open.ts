import type { StoreUrl } from '../../core/store-url.js';
import { EtcdStore } from './etcd-store.js';
import { parseEtcdUrl } from './etcd-url.js';

/**
 * `etcd://[user:password@]host[:port][,host[:port]…]` (port 2379 by default) with
 * `?prefix=/leasehold/&timeoutMs=5000&maxTxnOps=128`. One read checks that etcd answers.
 */
export async function openEtcd(url: StoreUrl): Promise<EtcdStore> {
  return EtcdStore.connect(parseEtcdUrl(url));
}
