// Jepsen-style runs: for each store setup, verify's fleet (worker processes with LeaseManagers and
// fenced writes) on a replicated store in a lab — every member and every worker on a network host
// of its own (network namespaces this run makes and removes), links cut by dropping packets on
// arrival — under one fault at a time, checked by verify's checker. Before each run, `leasehold
// doctor` reads the setup; the table sets its prediction beside the verdict. Two cycler processes
// take one hot lease in turns beside the fleet, as contenders for a singleton job do.
//
//   npm run build && node bench/jepsen.mjs [--setups etcd,zookeeper,...] [--seconds 30] [--out FILE]
//   node bench/jepsen.mjs --tables-from FILE   # the tables again from a run's JSON
//
// Needs root (network namespaces). Writes FILE (default bench/results/jepsen-latest.json) and the
// table beside it (.md).
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_DIST } from './lib/library.mjs';

const CONSENSUS = ['partition-leader', 'partition-holder', 'kill-leader', 'pause'];
const PRIMARY_REPLICA = ['failover', 'partition-holder', 'pause'];
// Sentinels fail over by themselves: the primary is cut off or killed, as a consensus leader is.
const SENTINEL = ['partition-leader', 'kill-leader', 'partition-holder', 'pause'];
const SETUPS = {
  etcd: CONSENSUS,
  zookeeper: CONSENSUS,
  nats: CONSENSUS,
  redis: PRIMARY_REPLICA,
  'redis-sentinel': SENTINEL,
  'postgres-async': PRIMARY_REPLICA,
  'postgres-sync': PRIMARY_REPLICA,
};

const { values } = parseArgs({
  options: {
    setups: { type: 'string', default: Object.keys(SETUPS).join(',') },
    seconds: { type: 'string', default: '30' },
    seed: { type: 'string', default: '11' },
    out: { type: 'string', default: 'bench/results/jepsen-latest.json' },
    dist: { type: 'string', default: DEFAULT_DIST },
    'tables-from': { type: 'string' },
  },
});

/** The doctor's unsafe findings on a run's setup, for a table cell. */
const doctorSays = (run) => {
  const unsafe = (run.doctor ?? []).filter((f) => f.level === 'unsafe').map((f) => f.id);
  return unsafe.length === 0 ? 'nothing unsafe' : `unsafe: ${unsafe.join(', ')}`;
};

/** A verdict cell: SAFE, or UNSAFE with what broke. */
const verdictOf = (r) => {
  if (r.error) return 'could not run';
  if (r.safe)
    return r.writes.rejected > 0 ? `SAFE (${r.writes.rejected} stale writes fenced)` : 'SAFE';
  const v = r.violations;
  const count = (n, one, many) => n > 0 && `${n} ${n === 1 ? one : many}`;
  const parts = [
    count(v.overlaps, 'overlap', 'overlaps'),
    count(v.tokenOrder, 'token out of order', 'tokens out of order'),
    count(v.data ?? 0, 'lease-data violation', 'lease-data violations'),
    count(v.staleAccepted, 'stale write accepted', 'stale writes accepted'),
  ].filter(Boolean);
  return `**UNSAFE** (${parts.join(', ')})`;
};

/** The full table (one row per run) and the README's matrix (one row per setup). */
function tables(result) {
  const { runs } = result;
  const full = [
    `| setup | fault | doctor | verdict | overlaps | token order | lease data | stale writes accepted | stale writes rejected | hot-lease grants | faults injected |`,
    `|---|---|---|---|---|---|---|---|---|---|---|`,
    ...runs.map((r) =>
      r.error
        ? `| ${r.setup} | ${r.fault} | | could not run: ${r.error} | | | | | | | |`
        : `| ${r.store} | ${r.fault} | ${doctorSays(r)} | **${r.safe ? 'SAFE' : 'UNSAFE'}** | ${r.violations.overlaps} | ${r.violations.tokenOrder} | ${r.violations.data ?? '–'} | ${r.violations.staleAccepted} | ${r.writes.rejected} | ${r.hotLease?.cycles ?? '–'} | ${r.injected[r.fault] ?? 0} |`,
    ),
  ];
  const order = ['partition-leader', 'kill-leader', 'failover', 'partition-holder', 'pause'];
  const faults = order.filter((fault) => runs.some((r) => r.fault === fault));
  const setups = [...new Set(runs.map((r) => r.setup))];
  const matrix = [
    `| setup | doctor | ${faults.join(' | ')} |`,
    `|---|---|${faults.map(() => '---').join('|')}|`,
    ...setups.map((setup) => {
      const row = runs.filter((r) => r.setup === setup);
      const first = row.find((r) => !r.error);
      const cells = faults.map((fault) => {
        const r = row.find((x) => x.fault === fault);
        return r ? verdictOf(r) : '–';
      });
      return `| ${first?.store ?? setup} | ${first ? doctorSays(first) : ''} | ${cells.join(' | ')} |`;
    }),
  ];
  return { full, matrix };
}

if (values['tables-from']) {
  const result = JSON.parse(readFileSync(values['tables-from'], 'utf8'));
  const { full, matrix } = tables(result);
  const text = `${matrix.join('\n')}\n\n${full.join('\n')}\n`;
  writeFileSync(values['tables-from'].replace(/\.json$/, '.md'), text);
  process.stdout.write(text);
  process.exit(0);
}
const seconds = Number(values.seconds);
if (!(seconds >= 5)) throw new Error('--seconds must be 5 or more');
const setups = values.setups.split(',').filter(Boolean);
for (const setup of setups) if (!SETUPS[setup]) throw new Error(`unknown setup ${setup}`);
const { runJepsenInLab } = await import(join(resolve(values.dist), 'cli/verify/jepsen.js'));
const { netlabUnavailable } = await import(join(resolve(values.dist), 'cli/harness/lab/netlab.js'));
const why = netlabUnavailable();
if (why) throw new Error(`cannot run: ${why}`);

const runs = [];
const started = Date.now();
for (const setup of setups) {
  for (const fault of SETUPS[setup]) {
    const t0 = Date.now();
    process.stderr.write(`${setup} × ${fault}: `);
    try {
      const summary = await runJepsenInLab({
        cluster: setup,
        faults: [fault],
        durationMs: seconds * 1000,
        workers: 4,
        resources: 40,
        ttlMs: 2000,
        seed: Number(values.seed),
      });
      // The history's folder is temporary, and the notes quote worker warnings: neither is kept.
      const kept = { ...summary };
      delete kept.dir;
      delete kept.notes;
      runs.push({ setup, fault, ...kept, wallMs: Date.now() - t0 });
      process.stderr.write(
        `${summary.safe ? 'SAFE' : 'UNSAFE'} (${summary.violations.overlaps} overlaps, ${summary.violations.tokenOrder} token-order, ${summary.violations.data} data, ${summary.writes.rejected} stale writes rejected)\n`,
      );
    } catch (error) {
      runs.push({ setup, fault, error: error.message, wallMs: Date.now() - t0 });
      process.stderr.write(`could not run: ${error.message}\n`);
    }
  }
}

const result = {
  when: new Date().toISOString(),
  seconds,
  workers: 4,
  resources: 40,
  ttlMs: 2000,
  seed: Number(values.seed),
  wallSeconds: Math.round((Date.now() - started) / 1000),
  runs,
};
writeFileSync(values.out, `${JSON.stringify(result, null, 2)}\n`);
const { full, matrix } = tables(result);
const text = `${matrix.join('\n')}\n\n${full.join('\n')}\n`;
writeFileSync(values.out.replace(/\.json$/, '.md'), text);
process.stdout.write(text);
