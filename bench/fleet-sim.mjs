// A fleet far larger than this machine, in virtual time: the real BucketManager code (the
// LeaseManager underneath), every manager in this process on one memory store and one manual
// clock, each manager through its own link to the store that adds a simulated latency and counts
// calls. The figures measure the design (virtual time, moves, store calls, CPU and memory per
// manager), not the machine.
//
//   bucketed   — W workers share B buckets; the catalogue holds R resources, R / B per bucket, and
//                each worker enumerates its buckets' resources in onBucket (a synthetic catalogue:
//                a bucket's resources are named for it, as a column that keeps bucketOf would give
//                them) and keeps them while it holds the bucket. Phases: cold start, one join, one
//                graceful leave, three crashes one after another, then a steady minute.
//   unbucketed — what a plain LeaseManager would pay at W workers × R' resources: one dealing of
//                the assignment (every worker does it at every membership change) and the memory of
//                one worker's wanted set and assignment. A whole fleet of those does not fit in
//                one process (W copies of the wanted set), which is the point.
//
// Assumptions: every store call takes the simulated latency (no queueing at the store); managers in
// one process share their dealings (an assignment is a pure function of its inputs, dealt once per
// process): CPU per manager is the process's CPU over W, and one dealing is reported apart, as
// each manager in its own process would pay it; memory per manager is the heap over W.
// Usage: npm run build && node --max-old-space-size=16384 bench/fleet-sim.mjs
//          [--workers 1000] [--buckets 16384] [--resources 10000000]
//          [--unbucketed-resources 1000000] [--latency-ms 2] [--crashes 3] [--out FILE]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_DIST, loadLibrary } from './lib/library.mjs';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '1000' },
    buckets: { type: 'string', default: '16384' },
    resources: { type: 'string', default: '10000000' },
    'unbucketed-resources': { type: 'string', default: '1000000' },
    'latency-ms': { type: 'string', default: '2' },
    crashes: { type: 'string', default: '3' },
    out: { type: 'string' },
    dist: { type: 'string' },
  },
});
const WORKERS = Number(values.workers);
const BUCKETS = Number(values.buckets);
const RESOURCES = Number(values.resources);
const UNBUCKETED = Number(values['unbucketed-resources']);
const LATENCY = Number(values['latency-ms']);
const CRASHES = Number(values.crashes);
const TTL = 10_000;
const HEARTBEAT = 2_000;
const STEP = 100;
const dist = values.dist ?? DEFAULT_DIST;
const { BucketManager, MemoryStore } = await loadLibrary(dist);
const { ManualClock } = await import(pathToFileURL(resolve(dist, 'testing/index.js')).href);
const { assign } = await import(pathToFileURL(resolve(dist, 'fleet/assign.js')).href);

const clock = new ManualClock();
const store = new MemoryStore({ clock });
const calls = new Map();
let cut = new Set();
/**
 * The memory store cannot watch: the links announce what passes through them as a store with
 * `watch` would (releases only, as most stores do; a crashed worker's leases are found by expiry
 * timers and scans), one latency after the release.
 */
const listeners = new Set();
let announcing = true;
function announce(resources) {
  if (!announcing || resources.length === 0) return;
  clock.setTimeout(() => {
    for (const resource of resources)
      for (const { prefix, listener } of listeners)
        if (resource.startsWith(prefix)) listener({ type: 'released', resource });
  }, LATENCY);
}

/** A manager's own path to the store: every call waits `LATENCY` on the manual clock, and counts. */
function link(id) {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'capabilities') return { ...target.capabilities, watch: true };
      if (key === 'watch')
        return (prefix, listener) => {
          const entry = { prefix, listener };
          listeners.add(entry);
          return () => listeners.delete(entry);
        };
      const value = Reflect.get(target, key, target);
      if (typeof value !== 'function' || typeof key !== 'string') return value;
      if (key === 'close') return value.bind(target);
      return (...args) => {
        calls.set(key, (calls.get(key) ?? 0) + 1);
        if (cut.has(id)) return new Promise(() => undefined); // a crashed worker's calls never return
        return new Promise((done) => clock.setTimeout(done, LATENCY))
          .then(() => value.apply(target, args))
          .then((answer) => {
            if (key === 'release' && answer) announce([args[0].resource]);
            if (key === 'releaseMany')
              announce(args[0].filter((_, i) => answer[i]).map((l) => l.resource));
            return answer;
          });
      };
    },
  });
}

const perBucket = Math.round(RESOURCES / BUCKETS);
let enumerated = 0;
let moves = 0;
const managers = [];

function makeManager(i) {
  const id = `w${String(i).padStart(4, '0')}`;
  const manager = new BucketManager({
    store: link(id),
    owner: id,
    clock,
    buckets: BUCKETS,
    ttlMs: TTL,
    heartbeatMs: HEARTBEAT,
    onBucket: (bucket) => {
      // What a worker keeps for the bucket while it holds it: its resources' names.
      const names = Array.from({ length: perBucket }, (_, k) => `c/${bucket.index}/${k}`);
      enumerated += names.length;
      return new Promise((done) =>
        bucket.lease.signal.addEventListener('abort', () => done(names.length), { once: true }),
      );
    },
  });
  manager.on('handoff', () => moves++);
  managers.push({ id, manager });
  return manager;
}

/** Every bucket held by a live manager, each within one of B / W. */
function settled(live) {
  const lo = Math.floor(BUCKETS / live.length);
  const hi = Math.ceil(BUCKETS / live.length);
  let held = 0;
  for (const { manager } of live) {
    const n = manager.held().filter((l) => l.isValid()).length;
    if (n < lo || n > hi) return false;
    held += n;
  }
  return held === BUCKETS;
}

/** Advances until `done()` (checked every STEP) or `maxMs`; the virtual time it took. */
async function until(done, maxMs) {
  const from = clock.monotonic();
  while (clock.monotonic() - from < maxMs) {
    await clock.advance(STEP);
    if (done()) return clock.monotonic() - from;
  }
  return null;
}

function cpuSeconds(from) {
  const used = process.cpuUsage(from);
  return (used.user + used.system) / 1e6;
}

function storeCalls() {
  const out = Object.fromEntries(calls);
  calls.clear();
  return out;
}

const result = {
  startedAt: new Date().toISOString(),
  assumptions:
    'virtual time; one memory store; every call takes latencyMs; managers share dealings within this process; CPU and heap per manager are the process totals over the workers',
  workers: WORKERS,
  buckets: BUCKETS,
  resources: RESOURCES,
  latencyMs: LATENCY,
  ttlMs: TTL,
  heartbeatMs: HEARTBEAT,
  bucketed: {},
  unbucketed: {},
};
const live = () => managers.filter(({ id, manager }) => !cut.has(id) && !manager.stopped);

// Cold start: every worker starts at the same virtual instant.
{
  globalThis.gc?.();
  const cpu = process.cpuUsage();
  for (let i = 0; i < WORKERS; i++) makeManager(i);
  let started = false;
  const starting = Promise.all(managers.map(({ manager }) => manager.start())).then(
    () => (started = true),
  );
  const ms = await until(() => started && settled(live()), 10 * 60_000);
  await starting;
  globalThis.gc?.();
  const heap = process.memoryUsage();
  result.bucketed.cold = {
    virtualMs: ms,
    handoffs: moves,
    resourcesEnumerated: enumerated,
    cpuSecondsPerManager: cpuSeconds(cpu) / WORKERS,
    heapMBPerManager: heap.heapUsed / 2 ** 20 / WORKERS,
    rssMB: heap.rss / 2 ** 20,
    storeCalls: storeCalls(),
  };
  console.log('cold', JSON.stringify(result.bucketed.cold));
}

/** One membership change: time to settle, moves, CPU, store calls. */
async function phase(name, change, bound) {
  moves = 0;
  enumerated = 0;
  storeCalls();
  const cpu = process.cpuUsage();
  await change();
  const ms = await until(() => settled(live()), 5 * 60_000);
  result.bucketed[name] = {
    virtualMs: ms,
    moves,
    ...(bound === undefined ? {} : { movesBound: bound }),
    resourcesEnumerated: enumerated,
    cpuSecondsPerManager: cpuSeconds(cpu) / live().length,
    storeCalls: storeCalls(),
  };
  console.log(name, JSON.stringify(result.bucketed[name]));
}

await phase(
  'join',
  async () => {
    const m = makeManager(WORKERS);
    void m.start();
  },
  Math.ceil(BUCKETS / (WORKERS + 1)),
);
await phase('leave', async () => {
  const { manager } = managers[1];
  manager.stopped = true;
  await Promise.all([manager.stop(), clock.advance(5 * LATENCY)]);
});
// Crashes, one after another (a different worker each time): when a dead worker is found depends
// on the membership sampling, so one crash says little.
for (let i = 0; i < CRASHES; i++)
  await phase(`crash${i + 1}`, async () => {
    cut = new Set([...cut, managers[2 + i].id]);
  });

// A steady minute: what the fleet costs the store when nothing changes.
{
  storeCalls();
  const cpu = process.cpuUsage();
  await clock.advance(60_000);
  const perMinute = storeCalls();
  result.bucketed.steady = {
    storeCallsPerVirtualMinute: perMinute,
    storeCallsPerVirtualSecond: Object.values(perMinute).reduce((a, b) => a + b, 0) / 60,
    cpuSecondsPerManagerPerVirtualMinute: cpuSeconds(cpu) / live().length,
  };
  console.log('steady', JSON.stringify(result.bucketed.steady));
}

// One bucketed dealing on its own (what each manager pays at a membership change in its own process).
{
  const members = Array.from({ length: WORKERS }, (_, i) => ({ id: `x${i}`, limit: Infinity }));
  const names = Array.from({ length: BUCKETS }, (_, i) => `leasehold/buckets/sim/${BUCKETS}/${i}`);
  const cpu = process.cpuUsage();
  await assign(names, members);
  result.bucketed.oneDealingCpuSeconds = cpuSeconds(cpu);
}
announcing = false;
await Promise.all([
  Promise.allSettled(live().map(({ manager }) => manager.stop({ timeoutMs: 100 }))),
  (async () => {
    for (let i = 0; i < 50; i++) await clock.advance(STEP);
  })(),
]);
managers.length = 0;

// Unbucketed: one dealing of W workers × R' resources, and one worker's wanted set and assignment.
{
  globalThis.gc?.();
  const base = process.memoryUsage().heapUsed;
  const names = Array.from({ length: UNBUCKETED }, (_, i) => `shard/${i}`);
  const wanted = new Set(names);
  const members = Array.from({ length: WORKERS }, (_, i) => ({ id: `y${i}`, limit: Infinity }));
  const cpu = process.cpuUsage();
  const dealt = await assign(names, members);
  const seconds = cpuSeconds(cpu);
  globalThis.gc?.();
  result.unbucketed = {
    resources: UNBUCKETED,
    oneDealingCpuSeconds: seconds,
    rendezvousWeights: UNBUCKETED * WORKERS,
    heapMBPerManager: (process.memoryUsage().heapUsed - base) / 2 ** 20,
    assigned: dealt.targetOf.size,
    wanted: wanted.size,
  };
  console.log('unbucketed', JSON.stringify(result.unbucketed));
}

const out = values.out ?? 'bench/results/fleet-sim-latest.json';
writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
console.log(`wrote ${out}`);
process.exit(0); // the crashed worker's timers would keep the process alive
