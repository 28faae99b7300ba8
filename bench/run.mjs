// leasehold benchmarks: store round trips and client costs, printed as a table.
// Usage: npm run bench [-- --stores memory,sqlite] [--quick]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LeaseClient, LeaseManager, MemoryStore, SqliteStore } from '../dist/index.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const storeArg = args[args.indexOf('--stores') + 1];
const wanted =
  args.includes('--stores') && storeArg
    ? storeArg.split(',')
    : ['memory', 'sqlite', 'sqlite-normal'];
const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-'));
const scale = quick ? 0.2 : 1;

const factories = {
  memory: async () => new MemoryStore(),
  sqlite: async () => SqliteStore.open(join(dir, 'full.db')),
  'sqlite-normal': async () => SqliteStore.open(join(dir, 'normal.db'), { synchronous: 'normal' }),
};

const rows = [];
function record(store, name, value, unit) {
  rows.push({ store, name, value, unit });
  console.log(
    `${store.padEnd(14)} ${name.padEnd(44)} ${value.toFixed(value < 10 ? 2 : 0).padStart(10)} ${unit}`,
  );
}

async function perSecond(fn, n) {
  const start = performance.now();
  for (let i = 0; i < n; i++) await fn(i);
  return n / ((performance.now() - start) / 1000);
}

async function ms(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

for (const name of wanted) {
  const make = factories[name];
  if (!make) throw new Error(`unknown store ${name}; known: ${Object.keys(factories).join(', ')}`);
  const store = await make();
  const n = Math.round(2000 * scale);

  record(
    name,
    'acquire (sequential)',
    await perSecond((i) => store.tryAcquire(`acq/${i}`, 'o', 20_000), n),
    'ops/s',
  );
  const leases = await Promise.all(
    Array.from({ length: n }, (_, i) => store.tryAcquire(`ren/${i}`, 'o', 20_000)),
  );
  record(name, 'renew (sequential)', await perSecond((i) => store.renew(leases[i]), n), 'ops/s');
  record(
    name,
    'release (sequential)',
    await perSecond((i) => store.release(leases[i]), n),
    'ops/s',
  );

  for (const size of [100, 1000, 10_000]) {
    const batch = [];
    for (let i = 0; i < size; i++)
      batch.push(await store.tryAcquire(`batch${size}/${i}`, 'o', 20_000));
    record(name, `renewMany of ${size} (one call)`, await ms(() => store.renewMany(batch)), 'ms');
    record(
      name,
      `releaseMany of ${size} (one call)`,
      await ms(() => store.releaseMany(batch)),
      'ms',
    );
  }

  // Graceful shutdown should stay flat as held leases grow: one releaseMany whatever the count.
  for (const size of [1, 100, 10_000]) {
    const client = new LeaseClient({ store, owner: `closer-${size}`, ttlMs: 20_000 });
    for (let i = 0; i < size; i++) await client.tryAcquire(`close${size}/${i}`);
    record(name, `client.close() holding ${size}`, await ms(() => client.close()), 'ms');
  }

  // LeaseManager.stop(): abort every lease's work, wait for it, release all in one call — flat in N.
  for (const size of [1, 100, 10_000]) {
    const resources = Array.from({ length: size }, (_, i) => `fleet${size}/${i}`);
    const manager = new LeaseManager({
      store,
      owner: `fleet-${size}`,
      resources,
      balance: false,
      ttlMs: 60_000,
      onAcquired: (lease) =>
        new Promise((resolve) => lease.signal.addEventListener('abort', resolve)),
    });
    await manager.start();
    if (manager.held().length !== size)
      throw new Error(`manager holds ${manager.held().length} of ${size}`);
    record(name, `manager.stop() holding ${size}`, await ms(() => manager.stop()), 'ms');
  }

  // Memory per held lease in a client (handle, heartbeat bookkeeping, AbortController).
  if (globalThis.gc) {
    const client = new LeaseClient({ store, owner: 'heap', ttlMs: 20_000 });
    globalThis.gc();
    const before = process.memoryUsage().heapUsed;
    const count = Math.round(10_000 * scale);
    for (let i = 0; i < count; i++) await client.tryAcquire(`heap/${i}`);
    globalThis.gc();
    record(
      name,
      'client heap per held lease',
      (process.memoryUsage().heapUsed - before) / count,
      'bytes',
    );
    await client.close();
  }
  await store.close();
}

rmSync(dir, { recursive: true, force: true });
