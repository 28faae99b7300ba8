import { LeaseClient, MemoryStore, type LeaseClientOptions } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { FaultyStore } from '../harness/faulty-store.js';

/** A memory store and a client on one manual clock, with the store wrapped for fault injection. */
export function rig(options: Partial<LeaseClientOptions> = {}) {
  const clock = new ManualClock();
  const real = new MemoryStore({ clock });
  const store = new FaultyStore(real);
  const client = new LeaseClient({
    store,
    owner: 'me',
    ttlMs: 1000,
    heartbeatMs: 250,
    clock,
    ...options,
  });
  const other = new LeaseClient({
    store: real,
    owner: 'other',
    ttlMs: 1000,
    heartbeatMs: 250,
    clock,
  });
  return { clock, real, store, client, other };
}
