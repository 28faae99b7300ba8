import type { StoreOpenOptions, StoreUrl } from '../../core/store-url.js';
import { EtcdStore } from './etcd-store.js';
import { parseEtcdUrl } from './etcd-url.js';

/**
 * `etcd://[user:password@]host[:port][,host[:port]…]` (port 2379 by default) with
 * `?prefix=/leasehold/&timeoutMs=5000&maxTxnOps=128`. One read checks that etcd answers. etcd
 * judges expiry on its own clock and needs no table: `options` changes nothing.
 */
export async function openEtcd(url: StoreUrl, _options: StoreOpenOptions = {}): Promise<EtcdStore> {
  return EtcdStore.connect(parseEtcdUrl(url));
}
