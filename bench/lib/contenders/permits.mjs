// The permits section's contenders: leasehold's counting lease (`acquire(name, { permits: 5 })`
// → `release()`, every worker on the one name), leasehold's exclusive lease (`tryAcquire` →
// `release()` of the worker's own name), and on Redis redis-semaphore's `Semaphore` with the same
// limit on one ioredis connection. Each leasehold contender opens its own store from a URL with
// default options, wrapped to count its store calls, and gives every worker its own LeaseClient
// (a client holds a permit of a name once per permit, and a waiter must not share an owner).
import { Redis } from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import { countingStore } from '../counting-store.mjs';

export const PERMITS = 5;
const WAIT_MS = 30_000;

export const SEMAPHORE_NOTE =
  'no fencing token; a waiter polls every retryInterval (10 ms) rather than hearing of a release, and the holder learns of a lost permit only when a refresh fails';

/** `[{ name, role, describe, note?, open() }]`; an opened one is `{ cycle(w), close(), calls() }`. */
export function permitContenders({ store, server, lib, ttlMs, maxInFlight }) {
  const list = [
    leasehold(lib, server, 'leasehold permits', 'pm_permits', maxInFlight, ttlMs, {
      role: 'leasehold',
      describe: `client.acquire(name, { permits: ${PERMITS} }) → release(); every worker on one name`,
      cycle: (client) => client.acquire('pool', { permits: PERMITS, waitMs: WAIT_MS }),
    }),
    leasehold(lib, server, 'leasehold exclusive', 'pm_exclusive', maxInFlight, ttlMs, {
      role: 'exclusive',
      describe: 'client.tryAcquire(name) → release(); each worker its own name',
      cycle: async (client, w) => {
        const lease = await client.tryAcquire(`job/${w}`);
        if (!lease) throw new Error(`exclusive: tryAcquire of job/${w} refused`);
        return lease;
      },
    }),
  ];
  if (store === 'redis') list.push(semaphore(server, ttlMs));
  return list;
}

function leasehold(lib, server, name, tag, maxInFlight, ttlMs, { role, describe, cycle }) {
  return {
    name,
    role,
    describe,
    open: async () => {
      const counting = countingStore(await lib.openStore(server.url(tag)));
      const clients = Array.from(
        { length: maxInFlight },
        (_, w) => new lib.LeaseClient({ store: counting.store, owner: `w${w}`, ttlMs }),
      );
      return {
        cycle: async (w) => {
          const lease = await cycle(clients[w], w);
          await lease.release();
        },
        calls: counting.snapshot,
        close: async () => {
          await Promise.all(clients.map((c) => c.close()));
          await counting.store.close();
        },
      };
    },
  };
}

function semaphore(server, ttlMs) {
  return {
    name: 'redis-semaphore',
    role: 'peer',
    describe: `new Semaphore(redis, key, ${PERMITS}).acquire() → release(); every worker on one key`,
    note: SEMAPHORE_NOTE,
    open: async () => {
      const redis = new Redis({ port: server.port, host: '127.0.0.1' });
      const options = {
        lockTimeout: ttlMs,
        refreshInterval: 0,
        acquireTimeout: WAIT_MS,
        retryInterval: 10,
      };
      return {
        cycle: async () => {
          const s = new Semaphore(redis, 'rs-pool', PERMITS, options);
          await s.acquire();
          await s.release();
        },
        calls: null,
        close: async () => redis.disconnect(),
      };
    },
  };
}
