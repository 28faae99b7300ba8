// What a fencing token costs etcd, layout by layout: acquire → release cycles of raw etcd
// transactions (no leasehold client code in the way) on one private etcd, for
//
//   bare       the bare compare-and-set of bench/lib/contenders/etcd.mjs (a key put on an etcd
//              lease, its revision the token, deleted on release): no token survives a release
//   leasehold  leasehold's own transactions (src/stores/etcd/etcd-ops.ts, from the build): the hold
//              key on the owner's etcd lease and the token key whose version is the token
//   revision   the model's other layout: a grant key created on the etcd lease, its create
//              revision the token (one put per acquire); a release deletes it and records the
//              token; the owner checked by the value's bounds; and the guard an upgrade needs — a
//              key on an etcd lease that never lapses, checked by every acquire, without which a
//              process of the earlier release (which acquires while the hold key is on no etcd
//              lease) could grant a second hold or a lower token
//   unguarded  `revision` without the guard: what one put per acquire costs when nothing shuts
//              the earlier release out
//
// Each round runs every layout in turn, cycle by cycle, for the wall time (median per layout),
// then in blocks of cycles for etcd's own CPU (from /proc in 10 ms ticks, so blocks of 2,000);
// the median and range over rounds are reported, each as a ratio to the bare compare-and-set of
// the same round.
//
//   npm run build && node bench/etcd-layouts.mjs [--rounds N] [--cycles N] [--cpu-cycles N] [--out DIR]
//
// Writes DIR/etcd-layouts.json (default bench/results).
import { Buffer } from 'node:buffer';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Etcd3 } from 'etcd3';
import { treeCpuUs } from './lib/cpu.mjs';
import { startEtcd } from './lib/private-servers.mjs';
import { positiveOptions } from './lib/args.mjs';
import { DEFAULT_DIST } from './lib/library.mjs';
import { installCleanupHandlers } from './lib/processes.mjs';
import { spread } from './lib/stats.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '9' },
    cycles: { type: 'string', default: '400' },
    'cpu-cycles': { type: 'string', default: '2000' },
    dist: { type: 'string', default: DEFAULT_DIST },
    out: { type: 'string', default: 'bench/results' },
  },
});
const {
  rounds: ROUNDS,
  cycles: CYCLES,
  'cpu-cycles': CPU_CYCLES,
} = positiveOptions(values, ['rounds', 'cycles', 'cpu-cycles']);

installCleanupHandlers();
const dist = resolve(values.dist);
const ops = await import(join(dist, 'stores/etcd/etcd-ops.js'));
const { EtcdKeys } = await import(join(dist, 'stores/etcd/etcd-keys.js'));
const server = await startEtcd();
const client = new Etcd3({ hosts: `http://${server.endpoint}` });
const { ID: lease } = await client.leaseClient.leaseGrant({ TTL: 3600 });
const GUARD = '1';
await client.leaseClient.leaseGrant({ TTL: 9_000_000_000, ID: GUARD });
const txn = (request) => client.kv.txn(request);
const bytes = (text) => Buffer.from(text, 'latin1');
let count = 0;
const nonce = () => (++count).toString(16).padStart(32, '0');

/** The keys of resource `x` under `prefix`, for the hand-written layouts. */
function keysOf(prefix) {
  const key = (kind) => bytes(`${prefix}x\0${kind}`);
  return {
    grant: key('g'),
    guard: key('h'),
    past: key('i'),
    record: key('r'),
    data: key('d'),
    start: bytes(`${prefix}x\0`),
    end: bytes(`${prefix}x\x01`),
  };
}

/** A revision-token acquire → release; `guarded` adds the check and first put of the guard key. */
function revisionCycle(prefix, guarded) {
  const k = keysOf(prefix);
  const above = bytes('o1\0');
  const below = bytes('o1\x01');
  return async () => {
    const grant = { key: k.grant, value: bytes(`o1\0${nonce()}${Date.now() + 20_000}`), lease };
    const compare = guarded
      ? [{ key: k.grant, range_end: k.past, target: 'Lease', result: 'Less', lease: 2 }]
      : [{ key: k.grant, target: 'Create', result: 'Equal', create_revision: 0 }];
    const success = [{ request_put: grant }, { request_range: { key: k.data } }];
    if (guarded) {
      success.push({
        request_txn: {
          compare: [{ key: k.guard, target: 'Lease', result: 'Equal', lease: GUARD }],
          success: [],
          failure: [{ request_put: { key: k.guard, value: Buffer.alloc(0), lease: GUARD } }],
        },
      });
    }
    const acquired = await txn({
      compare,
      success,
      failure: [{ request_range: { key: k.start, range_end: k.end } }],
    });
    const token = acquired.responses[0]?.response_put?.header?.revision;
    if (!acquired.succeeded || !token) throw new Error(`${prefix}: acquire refused`);
    const released = await txn({
      compare: [
        { key: k.grant, target: 'Create', result: 'Equal', create_revision: token },
        { key: k.grant, target: 'Value', result: 'Greater', value: above },
        { key: k.grant, target: 'Value', result: 'Less', value: below },
      ],
      success: [
        { request_delete_range: { key: k.grant } },
        {
          request_put: {
            key: k.record,
            value: bytes(`{"owner":"","expiresAt":0,"token":${token}}`),
          },
        },
      ],
      failure: [],
    });
    if (!released.succeeded) throw new Error(`${prefix}: release refused`);
  };
}

const LAYOUTS = {
  bare: (() => {
    const key = bytes('/bare/x');
    return async () => {
      const acquired = await txn({
        compare: [{ key, target: 'Version', result: 'Equal', version: 0 }],
        success: [{ request_put: { key, value: bytes('o1'), lease } }],
        failure: [],
      });
      if (!acquired.succeeded) throw new Error('bare: acquire refused');
      const released = await txn({
        compare: [{ key, target: 'Mod', result: 'Equal', mod_revision: acquired.header.revision }],
        success: [{ request_delete_range: { key } }],
        failure: [],
      });
      if (!released.succeeded) throw new Error('bare: release refused');
    };
  })(),
  leasehold: (() => {
    const keys = new EtcdKeys('/leasehold/').of('x');
    return async () => {
      const n = nonce();
      const answer = await txn(ops.acquireTxn(keys, 'o1', lease, Date.now() + 20_000, n));
      const token = ops.acquiredToken(answer, keys, 'o1', n);
      if (token === undefined) throw new Error('leasehold: acquire refused');
      const released = await txn(ops.releaseTxn(keys, { resource: 'x', owner: 'o1', token }));
      if (!released.succeeded) throw new Error('leasehold: release refused');
    };
  })(),
  revision: revisionCycle('/revision/', true),
  unguarded: revisionCycle('/unguarded/', false),
};
const names = Object.keys(LAYOUTS);

const wall = Object.fromEntries(names.map((n) => [n, []]));
const cpu = Object.fromEntries(names.map((n) => [n, []]));
for (const name of names) for (let i = 0; i < 50; i++) await LAYOUTS[name]();
for (let round = 0; round < ROUNDS; round++) {
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < CYCLES; i++) {
    for (const name of names) {
      const t0 = performance.now();
      await LAYOUTS[name]();
      times[name].push(performance.now() - t0);
    }
  }
  for (const name of names) {
    const sorted = times[name].sort((a, b) => a - b);
    wall[name].push(sorted[sorted.length >> 1] * 1000);
    const before = treeCpuUs(server.pid);
    for (let i = 0; i < CPU_CYCLES; i++) await LAYOUTS[name]();
    cpu[name].push((treeCpuUs(server.pid) - before) / CPU_CYCLES);
  }
  console.error(`[etcd-layouts] round ${round + 1}/${ROUNDS}`);
}

const rows = names.map((name) => {
  const ratio = (series) => spread(series[name].map((v, r) => series.bare[r] / v));
  return {
    layout: name,
    wallUs: spread(wall[name]),
    wallTimesBare: ratio(wall),
    etcdCpuUs: spread(cpu[name]),
    etcdCpuTimesBare: spread(cpu[name].map((v, r) => v / cpu.bare[r])),
  };
});
const fmt = (s, digits = 0) =>
  `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
console.log('| layout | µs per cycle | × bare (rate) | etcd CPU µs per cycle | etcd CPU ÷ bare |');
console.log('| --- | --- | --- | --- | --- |');
for (const row of rows) {
  console.log(
    `| ${row.layout} | ${fmt(row.wallUs)} | ${fmt(row.wallTimesBare, 2)} | ${fmt(row.etcdCpuUs)} | ${fmt(row.etcdCpuTimesBare, 2)} |`,
  );
}
const out = resolve(values.out, 'etcd-layouts.json');
writeFileSync(
  out,
  `${JSON.stringify({ at: new Date().toISOString(), rounds: ROUNDS, cycles: CYCLES, cpuCycles: CPU_CYCLES, rows }, null, 2)}\n`,
);
console.error(`[etcd-layouts] wrote ${out}`);
client.close();
server.stop();
process.exit(0);
