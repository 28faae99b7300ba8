// Fleet members for bench/fleet-scale.mjs, in one OS process: one LeaseManager per owner in
// `config.owners` (one with --per-process 1), each with its own store connection as a separate
// worker would have, over r/000000 … with work that only waits for its lease to end. It keeps
// counters per manager and answers the coordinator's IPC requests; nothing is logged.
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadLibrary } from './lib/library.mjs';
import { countingStore } from './lib/counting-store.mjs';
import { resourceNames } from './lib/resources.mjs';

const config = JSON.parse(process.argv[2]);
const { LeaseManager, openStore } = await loadLibrary(config.dist);
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

/** The managers this process hosts (`config.owners`), each with its own store connection. */
const hosted = new Map();
let stopping;
/** The process's CPU already split among its managers (see `splitCpu`). */
let cpuSeen = { user: 0, system: 0 };

// Without the coordinator there is nobody to report to: leave rather than linger as an orphan.
process.on('disconnect', () => process.exit(1));
// Handlers before the stores open: a report request or SIGTERM can come at any time.
process.on('SIGTERM', stopAll);
process.on('message', (message) => {
  if (message.type === 'report')
    process.send({ type: 'report', id: message.id, reports: reportAll() });
  else if (message.type === 'reset-loop') loop.reset();
  else if (message.type === 'stop') void stopOne(message.owner);
  else if (message.type === 'inspect')
    process.send({ type: 'inspect', id: message.id, reports: inspectAll(message.resources) });
  else if (message.type === 'history')
    process.send({ type: 'history', id: message.id, reports: historyAll(message.since) });
});

/**
 * Every manager's held count and member count over time since `since` (with the last point
 * before it), and older points dropped: the coordinator reconstructs from these, on the workers'
 * own clocks, when the fleet settled, without its polling period or its listing of the store.
 */
function historyAll(since) {
  const out = {};
  const from = (points) => {
    let first = points.findIndex(([at]) => at >= since);
    if (first === -1) first = points.length;
    points.splice(0, Math.max(0, first - 1));
    return points.slice();
  };
  for (const entry of hosted.values())
    out[entry.owner] = { held: from(entry.history.held), members: from(entry.history.members) };
  return out;
}

/**
 * What each manager here thinks of `resources` (unheld ones, when a phase did not settle): its
 * share and room, whether it is short, searching or held back, and each resource's target. Reads
 * the manager's private state: a diagnosis for this benchmark, not an interface.
 */
function inspectAll(resources) {
  const out = {};
  for (const entry of hosted.values()) {
    const m = entry.manager;
    if (!m || entry.stopping) continue;
    // Private state changes with the code: a field gone is reported, never a crash of the worker.
    try {
      const r = m.reconciler;
      const offs = r.holdOffs;
      const now = m.clock.monotonic();
      out[entry.owner] = {
        share: r.share,
        held: m.held().length,
        room: r.room(),
        short: r.short(),
        sinceSearchMs: now - offs.searchedAt,
        sinceGrewMs: now - offs.grewAt,
        running: m.loop.running,
        view: m.membership.size,
        resources: Object.fromEntries(
          resources.map((resource) => [
            resource,
            {
              target: r.assignment?.targetOf.get(resource),
              refused: offs.refusedAt.has(resource),
              freed: offs.freedAt.has(resource),
              timer: m.timers.timers.has(resource),
            },
          ]),
        ),
      };
    } catch (error) {
      out[entry.owner] = { error: `could not inspect: ${error?.message ?? error}` };
    }
  }
  return out;
}

/** LEASEHOLD_BENCH_TRACE=DIR: when this process began, opened its store and started, per owner. */
function traceStart(owner, event, at = Date.now()) {
  const dir = process.env.LEASEHOLD_BENCH_TRACE;
  if (dir) appendFileSync(join(dir, `${owner}.log`), `${Math.round(at)} ${event} - 0 \n`);
}

try {
  for (const owner of config.owners) {
    traceStart(owner, 'process', performance.timeOrigin);
    const counting = countingStore(await openStore(config.url));
    traceStart(owner, 'opened');
    const entry = newEntry(owner, counting);
    entry.manager = createManager(owner, counting.store, entry);
    hosted.set(owner, entry);
  }
  await Promise.all([...hosted.values()].map((e) => e.manager.start()));
  for (const owner of hosted.keys()) traceStart(owner, 'started');
  process.send({ type: 'started', at: Date.now() });
} catch (error) {
  const message = String(error?.message ?? error);
  process.send({ type: 'start-failed', error: message }, () => process.exit(1));
}

function newEntry(owner, counting) {
  return {
    owner,
    counting,
    manager: null,
    lastError: null,
    stopping: null,
    cpu: { user: 0, system: 0 },
    // [at, count] whenever the held count or the member count changed (see `historyAll`).
    history: { held: [[Date.now(), 0]], members: [] },
    historyDue: false,
    events: {
      acquired: 0,
      lost: 0,
      released: 0,
      handoff: 0,
      handoffBalance: 0,
      handoffUnwanted: 0,
      workFailed: 0,
      reconcileFailed: 0,
    },
  };
}

function createManager(owner, store, entry) {
  const { events } = entry;
  const m = new LeaseManager({
    store,
    owner,
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
          join(traceDir, `${owner}.log`),
          `${Date.now()} ${event} ${lease?.resource ?? '-'} ${m.held().length} ${detail}\n`,
        )
    : () => undefined;
  m.on('acquired', (lease) => trace('acquired', lease));
  // What the store announced lapsed, as this manager's store heard it.
  if (traceDir && store.watch)
    store.watch('', (event) => {
      if (event.type === 'expired') trace('watch-expired', event);
      // The fleet's own records (membership, generation): when this worker heard of a change.
      else if (!event.resource.startsWith('r/')) trace(`watch-${event.type}`, event);
    });
  // Attempts that did not grant (refused as held, an error): the tail of a takeover lies there.
  // The end of each reconcile pass (its load against its fair share).
  if (traceDir)
    subscribe('leasehold:fleet:load', (message) => {
      if (message.owner === owner) trace('pass', null, `${message.load}/${message.fair}`);
    });
  if (traceDir)
    subscribe('leasehold:acquire:attempt', (message) => {
      if (message.owner === owner && message.result !== 'acquired')
        trace(`attempt-${message.result}`, { resource: message.resource }, message.code ?? '');
    });
  m.on('handoff', (lease) => trace('handoff', lease));
  m.on('lost', (lease, error) => trace('lost', lease, `${error.code} ${error.message}`));
  m.on('reconcile-failed', (error) => trace('reconcile-failed', null, String(error?.message)));
  m.on('members', (members, share) =>
    trace('members', null, `${members.length} ${share} ${members.join(',')}`),
  );
  m.on('acquired', () => events.acquired++);
  m.on('lost', () => events.lost++);
  m.on('released', () => events.released++);
  // One point per burst of changes: the count once the events of this turn have run.
  const noteHeld = () => {
    if (entry.historyDue) return;
    entry.historyDue = true;
    process.nextTick(() => {
      entry.historyDue = false;
      const n = m.held().length;
      if (entry.history.held.at(-1)?.[1] !== n) entry.history.held.push([Date.now(), n]);
    });
  };
  for (const event of ['acquired', 'lost', 'released']) m.on(event, noteHeld);
  m.on('members', (members) => entry.history.members.push([Date.now(), members.length]));
  m.on('handoff', (_lease, reason) => {
    events.handoff++;
    events[reason === 'balance' ? 'handoffBalance' : 'handoffUnwanted']++;
  });
  m.on('work-failed', () => events.workFailed++);
  m.on('reconcile-failed', (error) => {
    events.reconcileFailed++;
    entry.lastError = String(error?.message ?? error).slice(0, 300);
  });
  return m;
}

/** The work: nothing but holding on until the lease is lost, handed off or the manager stops. */
function untilAborted(lease) {
  if (lease.signal.aborted) return;
  return new Promise((resolve) => lease.signal.addEventListener('abort', resolve, { once: true }));
}

/**
 * Splits the process's CPU used since the last call evenly among the managers running now (they
 * share one event loop; a per-manager split does not exist) and adds it to each one's count, so a
 * manager that stops changes the split from then on, not what the others were counted before.
 */
function splitCpu() {
  const running = [...hosted.values()].filter((e) => e.manager && !e.stopping);
  const now = process.cpuUsage();
  const [user, system] = [now.user - cpuSeen.user, now.system - cpuSeen.system];
  cpuSeen = now;
  for (const e of running) {
    e.cpu.user += user / running.length;
    e.cpu.system += system / running.length;
  }
  return running.length;
}

/** One manager's report: its share of the CPU (`splitCpu`), RSS split alike, the loop's stalls. */
function report(entry) {
  const running = Math.max(1, splitCpu());
  const cpu = entry.cpu;
  return {
    owner: entry.owner,
    held: entry.manager.held().length,
    events: { ...entry.events },
    store: entry.counting.snapshot(),
    rss: process.memoryUsage.rss() / running,
    cpu: { ...cpu },
    managersInProcess: running,
    loopMaxMs: loop.max / 1e6,
    lastError: entry.lastError,
    at: Date.now(),
  };
}

function reportAll() {
  const out = {};
  for (const entry of hosted.values())
    if (entry.manager && !entry.stopping) out[entry.owner] = report(entry);
  return out;
}

/** Graceful leave of one manager: it stops (releasing everything), then says goodbye. */
function stopOne(owner) {
  const entry = hosted.get(owner);
  if (!entry) return Promise.resolve();
  if (entry.stopping) return entry.stopping;
  const last = entry.manager ? report(entry) : null; // counts its CPU share up to now
  entry.stopping = (async () => {
    const started = Date.now();
    traceStart(owner, 'stopping');
    await entry.manager?.stop();
    traceStart(owner, 'stopped');
    await entry.counting.store.close().catch(() => undefined);
    const final = last ? { ...last, held: 0, stopMs: Date.now() - started } : null;
    process.send({ type: 'stopped', owner, report: final });
    hosted.delete(owner);
    if (hosted.size === 0) process.exit(0);
  })();
  return entry.stopping;
}

/** SIGTERM: every manager leaves gracefully, then the process exits. */
function stopAll() {
  stopping ??= Promise.all([...hosted.keys()].map(stopOne)).then(() => process.exit(0));
}
