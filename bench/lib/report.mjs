// Printing and saving fleet-scale results: a table per run as it finishes, a summary at the end,
// and JSON under bench/results/ (one file per run plus fleet-latest.json).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RESULTS = fileURLToPath(new URL('../results/', import.meta.url));

export function hostInfo() {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memoryMB: Math.round(totalmem() / 2 ** 20),
    node: process.version,
    loadavg: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

/**
 * Which manager was measured: a hash of the compiled dist/fleet (the code the workers actually
 * ran, so a rebuild mid-run is visible) and its commit — the repository's HEAD and src/fleet state
 * for ./dist, or a COMMIT file beside another build (`git archive` copies carry no .git).
 */
export function managerVersion(dist) {
  const git = (...args) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trimEnd();
    } catch {
      return null;
    }
  };
  const dir = join(dist, 'fleet/');
  const hash = createHash('sha256');
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.js'))
    .sort())
    hash.update(file).update(readFileSync(dir + file));
  const home = resolve(dist, '..');
  const own = home === resolve(ROOT);
  const marker = join(home, 'COMMIT');
  return {
    commit: own
      ? git('rev-parse', '--short', 'HEAD')
      : existsSync(marker)
        ? readFileSync(marker, 'utf8').trim()
        : 'unknown',
    repoHead: git('rev-parse', '--short', 'HEAD'),
    srcFleetChanges: own
      ? (git('status', '--porcelain', 'src/fleet')?.split('\n').filter(Boolean) ?? [])
      : [],
    dist,
    hash: hash.digest('hex').slice(0, 12),
  };
}

export function writeResults(result) {
  mkdirSync(RESULTS, { recursive: true });
  const stamp = result.startedAt.replace(/[:.]/g, '-');
  const text = `${JSON.stringify(result, null, 2)}\n`;
  // Several managers per process is another benchmark: its latest run is kept apart.
  const latest = result.options.perProcess > 1 ? 'fleet-per-process-latest' : 'fleet-latest';
  const files = [`${RESULTS}fleet-${stamp}.json`, `${RESULTS}${latest}.json`];
  for (const file of files) writeFileSync(file, text);
  return files;
}

const seconds = (ms) => (ms === null || ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);
const range = (s) => (s ? `${s.min}..${s.max}` : '-');

function phaseRow(run, name, p) {
  const per = run.managersPerProcess > 1 ? ` (${run.managersPerProcess}/proc)` : '';
  const base = { store: run.store, scale: `${run.workers}×${run.resources}${per}`, phase: name };
  if (!p) return { ...base, result: 'not run' };
  if (p.skipped) return { ...base, result: 'skipped' };
  return {
    ...base,
    result:
      (p.converged ? 'converged' : 'DID NOT CONVERGE') +
      (p.workersDied ? ` (${p.workersDied} died)` : ''),
    workers: String(p.liveWorkers ?? '-'),
    time: p.converged ? seconds(p.ms) : `>${seconds(p.timeoutMs)}`,
    'all held (reports)': seconds(p.allHeldMs),
    // The workers' own account (`settledByWorkers`): from the membership change as they saw it.
    'settled after change (workers)': seconds(p.workers?.fromChangeMs),
    handoffs: String(p.events.handoff),
    target: p.handoffTarget === undefined ? '' : `≤${p.handoffTarget}`,
    acquired: String(p.events.acquired),
    lost: String(p.events.lost),
    'held/records': p.reached ? `${p.reached.heldLive}/${p.reached.records}` : '-',
    'store per worker': range(p.reached?.store),
    'reported per worker':
      range(p.reached?.reported) + (p.reached?.silent ? ` (${p.reached.silent} silent)` : ''),
    'slowest IPC reply': p.polls?.mostSilent ? '≥5 s (timed out)' : seconds(p.polls?.slowestMs),
    'loop max ms': String(p.loopMaxMs?.max ?? '-'),
    'CPU s/manager': p.cpuSecondsPerManager ? String(p.cpuSecondsPerManager.median) : '-',
    load1: String(p.loadavg[0]),
  };
}

function steadyRow(run) {
  const s = run.phases?.steady;
  const base = { store: run.store, scale: `${run.workers}×${run.resources}` };
  if (!s) return { ...base, window: run.error ? `error: ${run.error}` : 'not run' };
  const c = s.callsPerMinute;
  return {
    ...base,
    window: seconds(s.windowMs),
    'renewMany/min': String(c.renewMany),
    'list/min': String(c.list),
    'records listed/min': String(s.itemsPerMinute.listRecords ?? 0),
    'tryAcquire/min': String(c.tryAcquire),
    'acquireMany/min': String(c.acquireMany),
    'release*/min': String(c.release + c.releaseMany),
    'renew+get/min': String(c.renew + c.get),
    'errors/min': String(Object.values(s.errorsPerMinute).reduce((a, b) => a + b, 0)),
    handoffs: String(s.events.handoff),
    'RSS MB min/med/max': s.rssMB ? `${s.rssMB.min}/${s.rssMB.median}/${s.rssMB.max}` : '-',
    'CPU % med (Σ)': s.cpuPercent ? `${s.cpuPercent.median} (${s.cpuPercent.sum})` : '-',
    'loop max ms': String(s.loopMaxMs?.max ?? '-'),
    converged: s.stillConverged === null ? '?' : s.stillConverged ? 'yes' : 'no',
  };
}

function table(rows) {
  if (rows.length === 0) return '';
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const width = (c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '').length));
  const line = (cells) => cells.map((cell, i) => cell.padEnd(width(columns[i]))).join('  ');
  return [line(columns), ...rows.map((r) => line(columns.map((c) => r[c] ?? '')))].join('\n');
}

function phaseRows(runs) {
  return runs
    .filter((r) => r.phases)
    .flatMap((r) => ['cold', 'join', 'leave', 'crash'].map((p) => phaseRow(r, p, r.phases[p])));
}

export function printRun(run) {
  console.log(`\n${run.store}, ${run.workers} workers × ${run.resources} resources`);
  console.log(table(phaseRows([run])));
  console.log(table([steadyRow(run)]));
  if (run.error) console.log(`  run failed: ${run.error}`);
  const phases = Object.entries(run.phases ?? {});
  const seen = new Set(phases.flatMap(([, p]) => p.errors ?? []));
  for (const e of seen) console.log(`  error seen by a worker: ${e}`);
  for (const [name, p] of phases)
    if (p.polls?.scanErrors)
      console.log(
        `  ${name}: ${p.polls.scanErrors} coordinator scans failed: ${p.polls.lastScanError}`,
      );
  for (const f of run.workerFailures ?? [])
    console.log(`  worker ${f.owner} failed: ${f.error ?? f.exit} ${f.stderr}`);
}

export function printSummary(result) {
  const { host, manager, options } = result;
  console.log(
    `\n== fleet-scale summary — ${host.cpus} CPUs, load ${host.loadavg.join(' ')} → ${host.loadavgEnd.join(' ')}; ` +
      `manager ${manager.commit} (dist/fleet ${manager.hash}${manager.srcFleetChanges.length ? ', src/fleet modified' : ''}); ` +
      `ttl ${options.ttlMs} ms, heartbeat ${options.heartbeatMs} ms, reconcile ${options.reconcileMs} ms`,
  );
  if (result.managerChangedDuringRun)
    console.log(`!! dist/fleet changed during the run: now ${result.managerChangedDuringRun.hash}`);
  console.log(table(phaseRows(result.runs)));
  console.log('\nsteady state (store calls per minute, whole fleet):');
  console.log(table(result.runs.map(steadyRow)));
}
