import type { StoreOpenOptions, StoreUrl } from '../../core/store-url.js';
import { ZookeeperStore } from './zookeeper-store.js';
import { parseZookeeperUrl } from './zookeeper-url.js';

/**
 * `zookeeper://host[:port][,host[:port]…][/chroot]` (port 2181 by default, chroot `/leasehold`)
 * with `?timeoutMs=5000&maxClockSkewMs=0`. Connecting creates the chroot's znodes when missing.
 * Expiry follows ZooKeeper's sessions, not a clock passed in: `options` changes nothing.
 */
export async function openZookeeper(
  url: StoreUrl,
  _options: StoreOpenOptions = {},
): Promise<ZookeeperStore> {
  return ZookeeperStore.connect(parseZookeeperUrl(url));
}
