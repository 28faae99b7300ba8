import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { StoreUrl } from '../../core/open-store.js';
import { EtcdStore } from './etcd-store.js';
import { parseEtcdUrl } from './etcd-url.js';

/**
 * `etcd://[user:password@]host[:port][,host[:port]…]` (port 2379 by default) with
 * `?prefix=/leasehold/&timeoutMs=5000&maxTxnOps=128`. One read checks that etcd answers.
 */
export async function openEtcd(url: StoreUrl): Promise<EtcdStore> {
  const target = parseEtcdUrl(url);
  try {
    return await EtcdStore.connect(target);
  } catch (error) {
    if (error instanceof LeaseError && error.code === ErrorCode.INVALID_ARGUMENT) {
      throw new LeaseError(ErrorCode.STORE_URL_INVALID, `${error.message} in ${url.redacted}`, {
        cause: error,
      });
    }
    throw error;
  }
}
