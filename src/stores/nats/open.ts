import type { StoreOpenOptions, StoreUrl } from '../../core/store-url.js';
import { NatsStore } from './nats-store.js';
import { parseNatsUrl } from './nats-url.js';

/**
 * `nats://[user:password@|token@]host[:port][,host[:port]…]` (port 4222 by default) with
 * `?bucket=leasehold&maxClockSkewMs=1000&timeoutMs=5000&createBucket=true&concurrency=256`.
 * Connects, opens the bucket (creating it when missing, unless `createBucket=false`) and checks it.
 * Takes `clock` from `options`; the URL alone says whether to create the bucket.
 */
export async function openNats(url: StoreUrl, options: StoreOpenOptions = {}): Promise<NatsStore> {
  return NatsStore.connect(parseNatsUrl(url), options.clock ? { clock: options.clock } : {});
}
