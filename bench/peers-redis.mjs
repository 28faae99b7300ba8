// leasehold beside its peers on one Redis, in one run: redis-semaphore's Mutex and redlock.
// Starts a private redis-server on a free 127.0.0.1 port. Usage: npm run bench:peers
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import Redlock from 'redlock';
import { LeaseClient, openStore } from '../dist/index.js';

const N = Number(process.env.BENCH_N ?? 2000);
const BATCH = 1000;

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-redis-'));
const server = spawn(
  'redis-server',
  ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
  {
    stdio: 'ignore',
  },
);
const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
redis.on('error', () => undefined); // connection attempts before the server listens
for (let i = 0; ; i++) {
  try {
    await redis.connect();
    break;
  } catch {
    if (i > 100) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const rows = [];
function record(library, name, value, unit) {
  rows.push({ library, name, value, unit });
  console.log(
    `${library.padEnd(16)} ${name.padEnd(46)} ${value.toFixed(value < 10 ? 2 : 0).padStart(9)} ${unit}`,
  );
}
const time = async (fn) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};

try {
  const store = await openStore(`redis://127.0.0.1:${port}?prefix=bench:`);
  const client = new LeaseClient({ store, owner: 'bench', ttlMs: 20_000, autoRenew: false });
  const redlock = new Redlock([redis], { retryCount: 0 });
  const mutex = (key) => new Mutex(redis, key, { lockTimeout: 20_000, refreshInterval: 0 });

  // Sequential acquire + release pairs. The libraries share ioredis, so whichever runs first warms
  // it for the others: three rounds in rotating order, best round reported for each.
  const pairs = {
    leasehold: async (tag) => {
      for (let i = 0; i < N; i++) await (await client.tryAcquire(`lh/${tag}/${i}`)).release();
    },
    'redis-semaphore': async (tag) => {
      for (let i = 0; i < N; i++) {
        const m = mutex(`rs/${tag}/${i}`);
        await m.acquire();
        await m.release();
      }
    },
    redlock: async (tag) => {
      for (let i = 0; i < N; i++)
        await (await redlock.acquire([`rl/${tag}/${i}`], 20_000)).release();
    },
  };
  const best = {};
  const names = Object.keys(pairs);
  for (let round = 0; round < 3; round++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(k + round) % names.length];
      const rate = N / ((await time(() => pairs[name](round))) / 1000);
      best[name] = Math.max(best[name] ?? 0, rate);
    }
  }
  for (const name of names)
    record(name, 'acquire + release (sequential pairs, best of 3)', best[name], 'pairs/s');

  // Keeping 1000 held: leasehold renews them in one call; the peers renew each lock on its own.
  const leases = [];
  for (let i = 0; i < BATCH; i++)
    leases.push(await store.tryAcquire(`lh-batch/${i}`, 'bench', 20_000));
  record(
    'leasehold',
    `renew ${BATCH} leases (renewMany: one call)`,
    await time(() => store.renewMany(leases)),
    'ms',
  );
  record(
    'leasehold',
    `release ${BATCH} leases (releaseMany: one call)`,
    await time(() => store.releaseMany(leases)),
    'ms',
  );

  const mutexes = Array.from({ length: BATCH }, (_, i) => mutex(`rs-batch/${i}`));
  await Promise.all(mutexes.map((m) => m.acquire()));
  // What its own refresh timer calls per lock (there is no public method for it).
  record(
    'redis-semaphore',
    `renew ${BATCH} locks (one refresh call each)`,
    await time(() => Promise.all(mutexes.map((m) => m._refresh()))),
    'ms',
  );
  record(
    'redis-semaphore',
    `release ${BATCH} locks (one call each)`,
    await time(() => Promise.all(mutexes.map((m) => m.release()))),
    'ms',
  );

  const locks = await Promise.all(
    Array.from({ length: BATCH }, (_, i) => redlock.acquire([`rl-batch/${i}`], 20_000)),
  );
  let extended = [];
  record(
    'redlock',
    `renew ${BATCH} locks (one extend call each)`,
    await time(async () => {
      extended = await Promise.all(locks.map((l) => l.extend(20_000)));
    }),
    'ms',
  );
  record(
    'redlock',
    `release ${BATCH} locks (one call each)`,
    await time(() => Promise.all(extended.map((l) => l.release()))),
    'ms',
  );
  await client.close();
  await store.close();
} finally {
  redis.disconnect();
  server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
