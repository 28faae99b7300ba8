import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { StoreUrl } from '../../core/open-store.js';
import type { LeaseStore } from '../../core/store.js';

// Placeholder until the etcd adapter lands: the scheme is reserved and says so.
export async function openEtcd(url: StoreUrl): Promise<LeaseStore> {
  throw new LeaseError(
    ErrorCode.STORE_URL_INVALID,
    `the etcd store is not available in this build (${url.redacted})`,
  );
}
