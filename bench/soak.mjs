// A soak: for each store, `leasehold verify`'s fleet — 8 worker processes, each a LeaseManager
// with fenced writes — over 10,000 resources for 30 minutes, with churn (a SIGKILL or a graceful
// stop of a worker about every minute, each followed by a replacement joining), checked at the end
// by verify's checker. Every worker reports its resident set, open file descriptors and longest
// event-loop delay every 10 s; the report gives, per worker that lived past the warm-up, the slope
// of its RSS and descriptors over time (least squares, after the first quarter of the run or of its
// life), and the longest delay seen. A leak shows as a slope that does not fall to about zero.
// Beside the fleet, cycler processes (3 by default) take a hot lease in turns for the whole run —
// acquire, one fenced write, release — checked with the fleet's history; the report gives their
// cycles, cycles per second and the same process slopes. The nemesis leaves the cyclers alone.
//
//   npm run build && node bench/soak.mjs [--stores sqlite,postgres,redis] [--minutes 30]
//     [--resources 10000] [--workers 8] [--hot-cyclers 3 (0: none)] [--out FILE]
//
// Writes FILE (default bench/results/soak-latest.json). PostgreSQL, Redis and etcd run on a
// private server verify starts; SQLite on a file in a temporary folder.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { positiveOptions } from './lib/args.mjs';
import { DEFAULT_DIST } from './lib/library.mjs';

const { values } = parseArgs({
  options: {
    stores: { type: 'string', default: 'sqlite,postgres,redis' },
    minutes: { type: 'string', default: '30' },
    resources: { type: 'string', default: '10000' },
    workers: { type: 'string', default: '8' },
    'hot-cyclers': { type: 'string', default: '3' },
    'report-every-s': { type: 'string', default: '10' },
    'fault-every-s': { type: 'string', default: '60' },
    out: { type: 'string', default: 'bench/results/soak-latest.json' },
    dist: { type: 'string', default: DEFAULT_DIST },
  },
});
const { resources: RESOURCES, workers: WORKERS } = positiveOptions(values, [
  'resources',
  'workers',
]);
const numbers = positiveOptions(values, ['minutes', 'report-every-s', 'fault-every-s'], {
  integer: false,
});
const MINUTES = numbers.minutes;
const REPORT_MS = numbers['report-every-s'] * 1000;
const FAULT_MS = numbers['fault-every-s'] * 1000;
const STORES = values.stores.split(',').filter(Boolean);
const HOT_CYCLERS = Number(values['hot-cyclers']);
if (!Number.isInteger(HOT_CYCLERS) || HOT_CYCLERS < 0)
  throw new Error('--hot-cyclers must be a whole number (0: no hot lease)');
const { runVerify } = await import(join(resolve(values.dist), 'cli/verify/run-verify.js'));

/** Least-squares slope of `ys` over `xs`, per unit of `xs`; null for fewer than three points. */
function slope(xs, ys) {
  if (xs.length < 3) return null;
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? null : num / den;
}

const round = (x, digits = 2) => (x === null ? null : Number(x.toFixed(digits)));

/**
 * One process's samples as a report: its life, last RSS and descriptors, their slopes after the
 * warm-up (the first quarter of the run, or of its life if it joined later), its longest loop delay.
 */
function processReport(id, list, runStart, warmUpMs) {
  const first = list[0].at;
  const life = list[list.length - 1].at - first;
  const from = first + Math.max(warmUpMs - (first - runStart), life / 4, 0);
  const steady = list.filter((s) => s.at >= from);
  const minutes = steady.map((s) => (s.at - first) / 60_000);
  return {
    id,
    minutes: round(life / 60_000, 1),
    rssMB: round(list[list.length - 1].rss / 2 ** 20, 1),
    rssSlopeMBPerMin: round(
      slope(
        minutes,
        steady.map((s) => s.rss / 2 ** 20),
      ),
      3,
    ),
    fds: list[list.length - 1].fds,
    fdSlopePerMin: round(
      slope(
        minutes,
        steady.map((s) => s.fds),
      ),
      3,
    ),
    longestLoopDelayMs: Math.max(...list.map((s) => s.loop)),
    samples: list.length,
  };
}

async function soak(store) {
  const samples = new Map(); // worker id → [{ at, rss, fds, loop }]
  let dir;
  let url = store;
  if (store === 'sqlite') {
    dir = mkdtempSync(join(tmpdir(), 'leasehold-soak-'));
    url = `sqlite:${join(dir, 'soak.db')}`;
  }
  const cpuBefore = process.cpuUsage();
  try {
    const outcome = await runVerify({
      store: url,
      durationMs: MINUTES * 60_000,
      workers: WORKERS,
      resources: RESOURCES,
      faults: ['kill', 'stop'],
      seed: 7,
      ttlMs: 10_000,
      ttlIsDefault: false,
      // Each held lease writes about every 20 s: 10,000 leases are some 500 fenced writes a second.
      writeEveryMs: [15_000, 25_000],
      faultEveryMs: FAULT_MS,
      reportEveryMs: REPORT_MS,
      ...(HOT_CYCLERS > 0 ? { hotLease: { cyclers: HOT_CYCLERS } } : {}),
      onEvent: (event) => {
        if (event.e !== 'process') return;
        const list = samples.get(event.w) ?? [];
        list.push({ at: event.at, rss: event.rssBytes, fds: event.fds, loop: event.loopMaxMs });
        samples.set(event.w, list);
      },
      say: (line) => process.stderr.write(`${line}\n`),
    });
    const warmUpMs = (MINUTES * 60_000) / 4;
    // Worker times are on verify's host clock: the run starts at the first report.
    const runStart = Math.min(...[...samples.values()].map((list) => list[0].at));
    const hot = outcome.hotLease;
    const isCycler = (id) => hot?.cyclers.includes(id) ?? false;
    const reports = [...samples].map(([id, list]) => processReport(id, list, runStart, warmUpMs));
    const workers = reports.filter((w) => !isCycler(w.id));
    const cyclerReports = reports.filter((w) => isCycler(w.id));
    const cpu = process.cpuUsage(cpuBefore);
    const long = workers.filter((w) => w.minutes >= MINUTES / 2);
    const r = outcome.result;
    return {
      store,
      minutes: MINUTES,
      workers: WORKERS,
      resources: RESOURCES,
      verdict: r.safe ? 'SAFE' : 'UNSAFE',
      violations: {
        overlaps: r.overlaps.length,
        tokenOrder: r.tokenOrder.length,
        staleAccepted: r.staleAccepted.length,
        data: r.data.violations.length,
      },
      faults: r.faults,
      // The fleet's and the hot lease's together (the hot lease's alone under `hotLease`).
      beliefs: r.beliefs,
      handovers: r.handovers,
      writes: r.writes,
      takeoverMs: r.takeover,
      livenessGaps: r.liveness.length,
      // Workers that lived at least half the run: the ones whose slopes say something.
      longLived: {
        count: long.length,
        worstRssSlopeMBPerMin: long.length
          ? Math.max(...long.map((w) => w.rssSlopeMBPerMin ?? 0))
          : null,
        worstFdSlopePerMin: long.length ? Math.max(...long.map((w) => w.fdSlopePerMin ?? 0)) : null,
      },
      longestLoopDelayMs: workers.length
        ? Math.max(...workers.map((w) => w.longestLoopDelayMs))
        : null,
      coordinatorCpuSeconds: round((cpu.user + cpu.system) / 1e6, 1),
      hotLease: hot
        ? {
            resource: hot.resource,
            cyclers: hot.cyclers.length,
            cycles: hot.cycles,
            cyclesPerSecond: hot.cyclesPerSecond,
            byCycler: hot.byCycler,
            grants: hot.grants,
            notReleased: hot.notReleased,
            spanSeconds: round(hot.spanMs / 1000, 1),
            writes: hot.writes,
            violations: hot.violations,
            worstRssSlopeMBPerMin: cyclerReports.length
              ? Math.max(...cyclerReports.map((w) => w.rssSlopeMBPerMin ?? 0))
              : null,
            worstFdSlopePerMin: cyclerReports.length
              ? Math.max(...cyclerReports.map((w) => w.fdSlopePerMin ?? 0))
              : null,
            longestLoopDelayMs: cyclerReports.length
              ? Math.max(...cyclerReports.map((w) => w.longestLoopDelayMs))
              : null,
            cyclerReports,
          }
        : null,
      workerReports: workers,
      notes: outcome.notes,
    };
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

const result = { startedAt: new Date().toISOString(), runs: [] };
for (const store of STORES) {
  process.stderr.write(`soak: ${store}, ${MINUTES} min, ${WORKERS} workers × ${RESOURCES}\n`);
  const run = await soak(store);
  result.runs.push(run);
  process.stderr.write(
    `soak: ${store}: ${run.verdict}, worst RSS slope ${run.longLived.worstRssSlopeMBPerMin} MB/min, ` +
      `worst fd slope ${run.longLived.worstFdSlopePerMin}/min, longest loop delay ${run.longestLoopDelayMs} ms` +
      (run.hotLease
        ? `; hot lease: ${run.hotLease.cycles} cycles (${run.hotLease.cyclesPerSecond}/s), ` +
          `${Object.values(run.hotLease.violations).reduce((a, b) => a + b, 0)} violations, ` +
          `cyclers' worst RSS slope ${run.hotLease.worstRssSlopeMBPerMin} MB/min`
        : '') +
      '\n',
  );
}
result.finishedAt = new Date().toISOString();
writeFileSync(resolve(values.out), `${JSON.stringify(result, null, 2)}\n`);
console.log(
  JSON.stringify(
    result.runs.map(({ workerReports: _w, hotLease, ...run }) => ({
      ...run,
      hotLease: hotLease && { ...hotLease, cyclerReports: undefined },
    })),
    null,
    2,
  ),
);
