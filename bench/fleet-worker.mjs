// One fleet member for bench/fleet-scale.mjs, in its own OS process: a LeaseManager over
// r/000000 … whose work only waits for its lease to end. It keeps counters and answers the
// coordinator's IPC requests; nothing is logged, so 50 of these stay cheap.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadLibrary } from './lib/library.mjs';
import { countingStore } from './lib/counting-store.mjs';
import { resourceNames } from './lib/resources.mjs';

const config = JSON.parse(process.argv[2]);
const { LeaseManager, openStore } = await loadLibrary(config.dist);
const events = {
  acquired: 0,
  lost: 0,
  released: 0,
  handoff: 0,
  handoffBalance: 0,
  handoffUnwanted: 0,
  workFailed: 0,
  reconcileFailed: 0,
};
let lastError = null;
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

let manager;
let counting;
let stopping;

// Without the coordinator there is nobody to report to: leave rather than linger as an orphan.
process.on('disconnect', () => process.exit(1));
// Handlers before the store opens: a report request or SIGTERM can come at any time.
process.on('SIGTERM', stop);
process.on('message', (message) => {
  if (message.type === 'report')
    process.send({ type: 'report', id: message.id, report: manager ? report() : null });
  else if (message.type === 'reset-loop') loop.reset();
  else if (message.type === 'stop') stop();
});

try {
  counting = countingStore(await openStore(config.url));
  manager = createManager(counting.store);
  await manager.start();
  process.send({ type: 'started', at: Date.now() });
} catch (error) {
  const message = String(error?.message ?? error);
  process.send({ type: 'start-failed', error: message }, () => process.exit(1));
}

function createManager(store) {
  const m = new LeaseManager({
    store,
    owner: config.owner,
    resources: resourceNames(config.resources),
    ttlMs: config.ttlMs,
    heartbeatMs: config.heartbeatMs,
    reconcileMs: config.reconcileMs,
    onAcquired: untilAborted,
  });
  // LEASEHOLD_BENCH_TRACE=DIR: one line per acquire and handoff, to see who moved what and when.
  const traceDir = process.env.LEASEHOLD_BENCH_TRACE;
  const trace = traceDir
    ? (event, lease, detail = '') =>
        appendFileSync(
          join(traceDir, `${config.owner}.log`),
          `${Date.now()} ${event} ${lease?.resource ?? '-'} ${m.held().length} ${detail}\n`,
        )
    : () => undefined;
  m.on('acquired', (lease) => trace('acquired', lease));
  m.on('handoff', (lease) => trace('handoff', lease));
  m.on('lost', (lease, error) => trace('lost', lease, `${error.code} ${error.message}`));
  m.on('reconcile-failed', (error) => trace('reconcile-failed', null, String(error?.message)));
  m.on('members', (members, share) =>
    trace('members', null, `${members.length} ${share} ${members.join(',')}`),
  );
  m.on('acquired', () => events.acquired++);
  m.on('lost', () => events.lost++);
  m.on('released', () => events.released++);
  m.on('handoff', (_lease, reason) => {
    events.handoff++;
    events[reason === 'balance' ? 'handoffBalance' : 'handoffUnwanted']++;
  });
  m.on('work-failed', () => events.workFailed++);
  m.on('reconcile-failed', (error) => {
    events.reconcileFailed++;
    lastError = String(error?.message ?? error).slice(0, 300);
  });
  return m;
}

/** The work: nothing but holding on until the lease is lost, handed off or the manager stops. */
function untilAborted(lease) {
  if (lease.signal.aborted) return;
  return new Promise((resolve) => lease.signal.addEventListener('abort', resolve, { once: true }));
}

function report() {
  return {
    owner: config.owner,
    held: manager.held().length,
    events: { ...events },
    store: counting.snapshot(),
    rss: process.memoryUsage.rss(),
    cpu: process.cpuUsage(),
    loopMaxMs: loop.max / 1e6,
    lastError,
    at: Date.now(),
  };
}

/** Graceful leave (SIGTERM): stop the manager, which releases everything, then say goodbye. */
function stop() {
  stopping ??= (async () => {
    const started = Date.now();
    await manager?.stop();
    const last = manager ? { ...report(), stopMs: Date.now() - started } : null;
    await counting?.store.close().catch(() => undefined);
    process.send({ type: 'stopped', report: last }, () => process.exit(0));
  })();
}
