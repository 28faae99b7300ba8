// Redis: leasehold beside the bare compare-and-set of the same shape (one Lua script per
// transition: a lock key with PX and a token counter that never expires) and the peers
// redis-semaphore (Mutex) and redlock on the same single node. Each opens its own connection.
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import Redlock from 'redlock';
import { leaseholdContenders } from './leasehold.mjs';

const CAS_ACQUIRE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. token, 'PX', ARGV[2])
return token
`;
const CAS_RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

export const PEER_NOTES = {
  redlock:
    'no fencing token; validity is judged on the client’s local clock (TTL less elapsed time and drift), and `using()` aborts its signal only once an extension has failed, not at a deadline',
  'redis-semaphore':
    'no fencing token; the holder learns of a lost lock only when a refresh fails (its own timer), not at a deadline',
};

export function contenders({ server, libs, ttlMs }) {
  const connect = () => new Redis({ port: server.port, host: '127.0.0.1' });
  return [
    ...leaseholdContenders(libs, server.url, ttlMs),
    {
      name: 'bare',
      role: 'bare',
      describe: 'ioredis: one Lua script each way (lock key with PX, INCR token key)',
      open: async () => {
        const redis = connect();
        redis.defineCommand('casAcquire', { numberOfKeys: 2, lua: CAS_ACQUIRE });
        redis.defineCommand('casRelease', { numberOfKeys: 1, lua: CAS_RELEASE });
        return {
          cycle: async (w) => {
            const token = await redis.casAcquire(`ct:{${w}}lock`, `ct:{${w}}token`, `o${w}`, ttlMs);
            if (token === 0) throw new Error('bare: not acquired');
            if ((await redis.casRelease(`ct:{${w}}lock`, `o${w}:${token}`)) !== 1)
              throw new Error('bare: release refused');
          },
          close: async () => redis.disconnect(),
        };
      },
    },
    {
      name: 'redis-semaphore',
      role: 'peer',
      describe: 'Mutex.tryAcquire(); release()',
      note: PEER_NOTES['redis-semaphore'],
      open: async () => {
        const redis = connect();
        const options = { lockTimeout: ttlMs, refreshInterval: 0, acquireAttemptsLimit: 1 };
        return {
          cycle: async (w) => {
            const mutex = new Mutex(redis, `rs:${w}`, options);
            if (!(await mutex.tryAcquire())) throw new Error('redis-semaphore: not acquired');
            await mutex.release();
          },
          close: async () => redis.disconnect(),
        };
      },
    },
    {
      name: 'redlock',
      role: 'peer',
      describe: 'acquire([key], ttl) with retryCount 0; release()',
      note: PEER_NOTES.redlock,
      open: async () => {
        const redis = connect();
        const redlock = new Redlock([redis], { retryCount: 0 });
        return {
          cycle: async (w) => {
            await (await redlock.acquire([`rl:${w}`], ttlMs)).release();
          },
          close: async () => redis.disconnect(),
        };
      },
    },
  ];
}

/** Commands the server processed, less this probe's own INFO calls. */
export async function probe(server) {
  const redis = new Redis({ port: server.port, host: '127.0.0.1' });
  let reads = 0;
  return {
    read: async () => {
      const info = await redis.info('stats');
      return Number(/total_commands_processed:(\d+)/.exec(info)[1]) - reads++;
    },
    close: async () => redis.disconnect(),
  };
}
