// What a fencing token costs ZooKeeper, layout by layout: acquire → release cycles on one private
// ZooKeeper (standalone, tmpfs, forceSync as in `npm run bench`), for
//
//   bare       the bare compare-and-set of bench/lib/contenders/zookeeper.mjs: multi(create the
//              ephemeral hold, setData the token znode: its version is the token); multi(check
//              the token znode's version, delete the hold); no record, so nothing to `get`
//   ops        leasehold's own `multi`s (src/stores/zookeeper/zookeeper-ops.ts, from the build),
//              sent raw: create the hold, count the token znode, write the record; delete the
//              hold, blank the record
//   zxid       the model's other layout: no token znode; the grant's transaction id (the record's
//              mzxid, in the answer to its setData) is the token, written into the record by
//              renewals and the release; two operations per transition, as bare
//   leasehold  the store itself (`tryAcquire` → `release`), client code included
//
// At 1 in flight the layouts take turns cycle by cycle (median cycle per layout and round); at 32
// in flight each runs for a slice of wall time, in turn, per round. ZooKeeper's own CPU per cycle
// comes from /proc over blocks of cycles. Each figure is a ratio to bare within its round:
// median (min–max) over rounds.
//
//   npm run build && node bench/zk-layouts.mjs [--rounds N] [--cycles N] [--slice-ms N] [--out DIR]
//
// Writes DIR/zk-layouts.json (default bench/results).
import { Buffer } from 'node:buffer';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { parseArgs } from 'node:util';
import zookeeper from 'node-zookeeper-client';
import { treeCpuUs } from './lib/cpu.mjs';
import { positiveOptions } from './lib/args.mjs';
import { DEFAULT_DIST } from './lib/library.mjs';
import { startZookeeper } from './lib/private-servers.mjs';
import { installCleanupHandlers } from './lib/processes.mjs';
import { median, spread } from './lib/stats.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    cycles: { type: 'string', default: '1000' },
    'slice-ms': { type: 'string', default: '1500' },
    dist: { type: 'string', default: DEFAULT_DIST },
    out: { type: 'string', default: 'bench/results' },
  },
});
const {
  rounds: ROUNDS,
  cycles: CYCLES,
  'slice-ms': SLICE_MS,
} = positiveOptions(values, ['rounds', 'cycles', 'slice-ms']);
const IN_FLIGHT = 32;
const TTL_MS = 20_000;

installCleanupHandlers();
const dist = resolve(values.dist);
const ops = await import(join(dist, 'stores/zookeeper/zookeeper-ops.js'));
const { ZkPaths } = await import(join(dist, 'stores/zookeeper/zookeeper-paths.js'));
const { openStore } = await import(join(dist, 'index.js'));
const server = await startZookeeper();
const client = await connect(server.endpoint);
const modes = {
  persistent: zookeeper.CreateMode.PERSISTENT,
  ephemeral: zookeeper.CreateMode.EPHEMERAL,
};
const EMPTY = Buffer.alloc(0);
const call = (fn) =>
  new Promise((ok, fail) => fn((error, value) => (error ? fail(error) : ok(value))));
const commit = (tx) => call((done) => tx.commit(done));
const mkdirp = (path) => call((done) => client.mkdirp(path, done));
const store = await openStore(`zookeeper://${server.endpoint}/leasehold`);

/** Worker `w`'s cycle of each layout. */
const LAYOUTS = {
  bare: async (w) => {
    const acquired = await commit(
      client
        .transaction()
        .create(`/bare/h${w}`, Buffer.from('o1'), modes.ephemeral)
        .setData(`/bare/t${w}`, EMPTY, -1),
    );
    await commit(
      client.transaction().check(`/bare/t${w}`, acquired[1].stat.version).remove(`/bare/h${w}`, -1),
    );
  },
  ops: async (w) => {
    const p = opsPaths.of(`x${w}`);
    await commit(tx((t) => ops.acquireOps(t, p, 'o1', TTL_MS, modes)));
    await commit(tx((t) => ops.releaseOps(t, p, -1)));
  },
  zxid: async (w) => {
    const record = `/zxid/r${w}`;
    const acquired = await commit(
      client
        .transaction()
        .create(`${record}/h`, Buffer.from('o1'), modes.ephemeral)
        .setData(record, Buffer.from(`{"o":"o1","t":${TTL_MS}}`), -1),
    );
    const { mzxid } = acquired[1].stat;
    const token = mzxid.readUInt32BE(0) * 0x1_0000_0000 + mzxid.readUInt32BE(4);
    await commit(
      client
        .transaction()
        .remove(`${record}/h`, -1)
        .setData(record, Buffer.from(`{"o":"","t":0,"k":${token}}`), acquired[1].stat.version),
    );
  },
  leasehold: async (w) => {
    const lease = await store.tryAcquire(`y${w}`, 'o1', TTL_MS);
    if (!lease || !(await store.release(lease))) throw new Error('leasehold: refused');
  },
};
const opsPaths = new ZkPaths('/ops');
const tx = (build) => {
  const t = client.transaction();
  build(t);
  return t;
};
for (let w = 0; w < IN_FLIGHT; w++) {
  await mkdirp(`/bare/t${w}`);
  await mkdirp(`/zxid/r${w}`);
  const p = opsPaths.of(`x${w}`);
  await mkdirp(p.token);
}
const names = Object.keys(LAYOUTS);
for (const name of names) for (let i = 0; i < 200; i++) await LAYOUTS[name](0); // warm-up

const one = Object.fromEntries(names.map((n) => [n, []]));
const many = Object.fromEntries(names.map((n) => [n, []]));
const serverCpu = Object.fromEntries(names.map((n) => [n, []]));
for (let round = 0; round < ROUNDS; round++) {
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < CYCLES; i++) {
    for (const name of names) {
      const t = performance.now();
      await LAYOUTS[name](0);
      times[name].push(performance.now() - t);
    }
  }
  for (const name of names) one[name].push(1000 / median(times[name]));
  for (const name of names) {
    let cycles = 0;
    const cpu = treeCpuUs(server.pid);
    const end = performance.now() + SLICE_MS;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async (_, w) => {
        while (performance.now() < end) {
          await LAYOUTS[name](w);
          cycles++;
        }
      }),
    );
    many[name].push(cycles / (SLICE_MS / 1000));
    serverCpu[name].push((treeCpuUs(server.pid) - cpu) / cycles);
  }
  process.stderr.write(`round ${round + 1}/${ROUNDS}\n`);
}

const ratio = (rates, name) => spread(rates[name].map((r, i) => r / rates.bare[i]));
const result = {
  at: new Date().toISOString(),
  server: 'ZooKeeper standalone, data on tmpfs, forceSync=yes',
  rounds: ROUNDS,
  cyclesPerRound: CYCLES,
  sliceMs: SLICE_MS,
  layouts: Object.fromEntries(
    names.map((name) => [
      name,
      {
        perSecondAt1: Math.round(median(one[name])),
        xBareAt1: ratio(one, name),
        perSecondAt32: Math.round(median(many[name])),
        xBareAt32: ratio(many, name),
        serverCpuUsPerCycleAt32: Math.round(median(serverCpu[name])),
      },
    ]),
  ),
};
const out = resolve(values.out);
writeFileSync(join(out, 'zk-layouts.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify(result.layouts, null, 2));
await store.close();
client.close();
server.stop();
process.exit(0);

function connect(endpoint) {
  const c = zookeeper.createClient(endpoint, {
    sessionTimeout: TTL_MS,
    spinDelay: 100,
    retries: 0,
  });
  return new Promise((ok, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`no ZooKeeper session with ${endpoint} within 10 s`)),
      10_000,
    );
    c.once('connected', () => {
      clearTimeout(timer);
      ok(c);
    });
    c.connect();
  });
}
