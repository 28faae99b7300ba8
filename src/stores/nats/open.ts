import type { StoreUrl } from '../../core/store-url.js';
import type { Clock } from '../../core/time.js';
import { NatsStore } from './nats-store.js';
import { parseNatsUrl } from './nats-url.js';

/**
 * `nats://[user:password@|token@]host[:port][,host[:port]…]` (port 4222 by default) with
 * `?bucket=leasehold&maxClockSkewMs=1000&timeoutMs=5000&createBucket=true&concurrency=256`.
 * Connects, opens the bucket (creating it when missing, unless `createBucket=false`) and checks it.
 */
export async function openNats(url: StoreUrl, given: { clock?: Clock } = {}): Promise<NatsStore> {
  return NatsStore.connect(parseNatsUrl(url), given.clock ? { clock: given.clock } : {});
}
