// LeaseManager fleets at scale: N managers over W resources on a real store, one process each or
// --per-process of them per process (each with its own store connection), through a cold start, a
// worker joining (a new process), a worker leaving gracefully, a process SIGKILLed (every manager
// in it) and a steady-state window. Starts its own servers on free 127.0.0.1 ports and kills them
// (and every worker) on the way out.
// Usage: npm run build && node bench/fleet-scale.mjs [--quick] [--stores …] [--scales …] (--help)
import { appendFileSync, mkdirSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import { parseOptions } from './lib/args.mjs';
import { Fleet } from './lib/fleet.mjs';
import {
  awaitConvergence,
  eventTotals,
  measureSteady,
  settledByWorkers,
  spread,
} from './lib/phases.mjs';
import { loadLibrary } from './lib/library.mjs';
import { installCleanupHandlers } from './lib/processes.mjs';
import { hostInfo, managerVersion, printRun, printSummary, writeResults } from './lib/report.mjs';
import { resourceNames } from './lib/resources.mjs';
import { startStore } from './lib/stores.mjs';

const options = parseOptions(process.argv.slice(2));
installCleanupHandlers();
// LEASEHOLD_BENCH_TRACE=DIR names a folder for the traces; it is made when missing.
if (process.env.LEASEHOLD_BENCH_TRACE)
  mkdirSync(process.env.LEASEHOLD_BENCH_TRACE, { recursive: true });
const { openStore, LIMITS } = await loadLibrary(options.dist);
const log = (line) => {
  console.error(`[fleet-scale] ${line}`);
  // LEASEHOLD_BENCH_TRACE=DIR: the coordinator's lines too, to line up the phases with the workers'.
  const dir = process.env.LEASEHOLD_BENCH_TRACE;
  if (dir) appendFileSync(joinPath(dir, 'coordinator.log'), `${Date.now()} ${line}\n`);
};

const result = {
  startedAt: new Date().toISOString(),
  host: hostInfo(),
  manager: managerVersion(options.dist),
  options,
  runs: [],
};
const maxWorkers = Math.max(...options.scales.map((s) => s.workers)) + 1;

for (const name of options.stores) {
  let server;
  try {
    server = await startStore(name, { maxWorkers });
  } catch (error) {
    // No server: every scale of this store is reported as not run, and the next store runs.
    log(`${name}: ${error.stack ?? error}`);
    const message = String(error.message ?? error);
    for (const scale of options.scales) result.runs.push({ store: name, ...scale, error: message });
    continue;
  }
  try {
    for (const scale of options.scales) {
      const run = await runScale(name, server, scale).catch((error) => {
        log(`${name} ${scale.workers}x${scale.resources}: ${error.stack ?? error}`);
        return { store: name, ...scale, error: String(error.message ?? error) };
      });
      result.runs.push(run);
      printRun(run);
    }
  } finally {
    server.stop();
  }
}
result.finishedAt = new Date().toISOString();
result.host.loadavgEnd = hostInfo().loadavg;
const after = managerVersion(options.dist);
if (after.hash !== result.manager.hash) result.managerChangedDuringRun = after;
printSummary(result);
const files = writeResults(result);
log(`results: ${files.join(', ')}`);

/** One store at one scale: cold start, join, leave, steady state. */
async function runScale(name, server, { workers, resources }) {
  // A server that died at the scale before is not started again: this scale is reported as such.
  const dead = server.died?.();
  if (dead) throw new Error(`the store's server died: ${dead.split('\n').at(-1)}`);
  const tag = `fleet_${workers}x${resources}_${Date.now().toString(36)}`;
  const url = server.urlFor(tag);
  const store = await openStore(server.coordinatorUrlFor(tag));
  // Creates the table (or file) before N workers race to, and warms the coordinator's connection.
  await store.list({ prefix: 'r/', limit: 1 });
  const { ttlMs, heartbeatMs, reconcileMs, dist } = options;
  const fleet = new Fleet({ dist, url, resources, ttlMs, heartbeatMs, reconcileMs });
  const listing = { paging: 'not needed', maxLimit: LIMITS.listMaxLimit };
  const ctx = {
    fleet,
    store,
    resources,
    options,
    listing,
    log: (l) => log(`${name} ${workers}x${resources} ${l}`),
    // LEASEHOLD_BENCH_TRACE=DIR: what the coordinator polled and the workers' histories.
    trace: process.env.LEASEHOLD_BENCH_TRACE
      ? (l) =>
          appendFileSync(
            joinPath(process.env.LEASEHOLD_BENCH_TRACE, 'coordinator.log'),
            `${Date.now()} ${l}\n`,
          )
      : undefined,
  };
  const perProcess = options.perProcess;
  const run = {
    store: name,
    workers,
    resources,
    ttlMs,
    heartbeatMs,
    reconcileMs,
    managersPerProcess: perProcess,
    phases: {},
  };
  try {
    ctx.log(`cold start (${perProcess} manager(s) per process)`);
    const cold = Date.now();
    for (let i = 0; i < workers; i += perProcess) fleet.spawn(Math.min(perProcess, workers - i));
    run.phases.cold = await withCpu(ctx, () =>
      awaitConvergence(ctx, { since: cold, baseline: eventTotals(new Map()) }),
    );
    serverAlive(server, run, ctx);
    if (run.phases.cold.converged || options.continueAfterTimeout) {
      run.phases.join = await withCpu(ctx, () => join(ctx, workers));
      serverAlive(server, run, ctx);
      run.phases.leave = await withCpu(ctx, () => leave(ctx));
      serverAlive(server, run, ctx);
      run.phases.crash = await withCpu(ctx, () => crash(ctx));
      serverAlive(server, run, ctx);
    } else {
      const skipped = 'cold start did not converge (--continue runs it anyway)';
      run.phases.join = { skipped };
      run.phases.leave = { skipped };
      run.phases.crash = { skipped };
    }
    ctx.log(`steady state for ${options.steadyMs / 1000} s`);
    run.phases.steady = await measureSteady(ctx);
  } catch (error) {
    // Keep what was measured so far; the next scale or store still runs.
    ctx.log(`failed: ${error.stack ?? error}`);
    run.error = String(error.message ?? error);
  } finally {
    run.listPaging = listing.paging;
    run.workerFailures = fleet.failures();
    await fleet.killAll();
    await store.close().catch(() => undefined);
  }
  return run;
}

/** Throws, ending the run at this scale, when the store's server died during the last phase. */
function serverAlive(server, run, ctx) {
  const last = server.died?.();
  if (!last) return;
  run.serverDied = last;
  ctx.log(`the store's server died: ${last}`);
  throw new Error(`the store's server died: ${last.split('\n').at(-1)}`);
}

/**
 * A phase, with the CPU-seconds its managers used (each process's CPU split evenly among the
 * managers it ran at each moment) and the RSS per manager at its end (min / median / max).
 */
async function withCpu(ctx, run) {
  const before = ctx.fleet.reports();
  const phase = await run();
  const after = await ctx.fleet.poll();
  const seconds = [];
  for (const owner of ctx.fleet.live) {
    const [a, b] = [before.get(owner), after.get(owner)];
    const used = (r) => (r ? r.cpu.user + r.cpu.system : 0);
    if (b) seconds.push((used(b) - used(a)) / 1e6);
  }
  phase.cpuSecondsPerManager = spread(seconds);
  phase.rssMBPerManager = spread(
    ctx.fleet.live.filter((o) => after.get(o)).map((o) => after.get(o).rss / 2 ** 20),
  );
  return phase;
}

/** One more worker; the target is ⌈W/(N+1)⌉ + N handoffs. */
async function join(ctx, workers) {
  ctx.log('join');
  const baseline = eventTotals(await ctx.fleet.poll());
  ctx.fleet.broadcast({ type: 'reset-loop' });
  const since = Date.now();
  ctx.fleet.spawn();
  const phase = await awaitConvergence(ctx, { since, baseline });
  phase.handoffTarget = Math.ceil(ctx.resources / (workers + 1)) + workers;
  // From the first worker's view of the new membership: the join itself, not the spawn.
  phase.workers = await settledByWorkers(ctx, { since, members: ctx.fleet.live.length });
  return phase;
}

/**
 * Resources no live lease holds (at most 20), and what every manager thinks of them: a phase
 * that did not settle says why.
 */
async function inspectUnheld(ctx) {
  // Paged: a list answers at most 100,000 records (LIMITS), and asking for more is refused.
  const records = [];
  for (let after = ''; ;) {
    const page = await ctx.store.list({ prefix: 'r/', limit: 10_000, after });
    records.push(...page);
    if (page.length < 10_000) break;
    after = page.at(-1).resource;
  }
  const now = Date.now();
  const live = new Set(
    records.filter((r) => r.owner !== '' && r.expiresAt >= now).map((r) => r.resource),
  );
  const unheld = resourceNames(ctx.resources)
    .filter((name) => !live.has(name))
    .slice(0, 20);
  const records0 = Object.fromEntries(
    records.filter((r) => unheld.includes(r.resource)).map((r) => [r.resource, r]),
  );
  return { resources: unheld, records: records0, managers: await ctx.fleet.inspect(unheld) };
}

/** SIGKILL of a process: its managers' leases are taken over at about the TTL. */
async function crash(ctx) {
  ctx.log('crash');
  const baseline = eventTotals(await ctx.fleet.poll());
  ctx.fleet.broadcast({ type: 'reset-loop' });
  const since = Date.now();
  const killed = await ctx.fleet.crash(ctx.fleet.live[0]);
  const phase = await awaitConvergence(ctx, { since, baseline });
  phase.killedManagers = killed.length;
  phase.workers = await settledByWorkers(ctx, {
    since,
    members: ctx.fleet.live.length,
    changeAt: since,
  });
  return phase;
}

/** The oldest manager stops gracefully, releasing everything to the others. */
async function leave(ctx) {
  ctx.log('leave');
  const baseline = eventTotals(await ctx.fleet.poll());
  ctx.fleet.broadcast({ type: 'reset-loop' });
  const since = Date.now();
  const owner = ctx.fleet.live[0];
  const leaving = ctx.fleet.leave(owner);
  const phase = await awaitConvergence(ctx, { since, baseline });
  phase.leaver = { owner, ...(await leaving) };
  phase.workers = await settledByWorkers(ctx, {
    since,
    members: ctx.fleet.live.length,
    changeAt: since,
  });
  if (!phase.converged) phase.unheld = await inspectUnheld(ctx);
  return phase;
}
