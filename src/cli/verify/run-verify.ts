import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { redact } from '../../core/store-url.js';
import { resourceNames } from '../harness/demo-settings.js';
import { createDownstream, unreportedWrites } from '../harness/downstream.js';
import { CliFailure, scrubPassword } from '../output.js';
import { checkRecords, type CheckResult } from '../harness/checker.js';
import { DEFAULT_DRIFT_RATE, driftIsBeyond, drifts, formatRate } from './drift.js';
import type { VerifyLab } from './cluster-fault.js';
import { isClusterFault, isStoreFault, type FaultName } from './faults.js';
import { Fleet, type WorkerProcess } from '../harness/fleet.js';
import type { WorkerEvent } from '../harness/worker-protocol.js';
import { floorUs, HOST_CLOCK, hostNow, ROUNDING_MS } from '../harness/host-clock.js';
import {
  historyLine,
  type FaultRecord,
  type HistoryRecord,
  type RunRecord,
} from '../harness/history-format.js';
import { killOnExit } from '../harness/kill-on-exit.js';
import { probeStore } from '../harness/probe-store.js';
import { HistoryRecorder } from '../harness/recorder.js';
import { htmlReport } from './html-report.js';
import {
  cyclerIds,
  DEFAULT_HOT_REST_MS,
  hotLeaseReport,
  type HotLeaseOptions,
  type HotLeaseReport,
} from './hot-lease.js';
import { seededRandom } from './random.js';
import { privateServerScheme, startPrivateServer, type PrivateServer } from './private-servers.js';
import { nemesis } from './nemesis.js';

const WORKER_ENTRY = fileURLToPath(new URL('../harness/worker.js', import.meta.url));

export interface VerifyOptions {
  /** A store URL, or a scheme alone (`redis`, `postgres`, `etcd`): verify starts a private server. */
  store: string;
  durationMs: number;
  workers: number;
  resources: number;
  /** Holders allowed per resource: a counting lease of this many permits (1: exclusive, the manager). */
  permits?: number;
  faults: FaultName[];
  seed: number;
  ttlMs: number;
  ttlIsDefault: boolean;
  /** The largest clock offset between two workers (`skew`); the store's allowance by default. */
  skewMs?: number;
  /** The rate the drifting workers' clocks run at (`drift`); {@link DEFAULT_DRIFT_RATE} by default. */
  driftRate?: number;
  reportDir?: string;
  /** Progress lines (stderr). */
  say: (line: string) => void;
  /**
   * For long runs (`npm run bench:soak`): how often each worker writes under each lease it holds
   * ([100, 200] ms by default), the time between two faults (about a TTL by default), and how often
   * workers report their memory, file descriptors and event-loop delay (never by default), to
   * `onEvent` with every other worker event.
   */
  writeEveryMs?: readonly [number, number];
  faultEveryMs?: number;
  reportEveryMs?: number;
  onEvent?: (event: WorkerEvent) => void;
  /**
   * Cycler processes beside the fleet that acquire, write under and release one hot lease in a
   * loop, contending with each other; their holds and writes are checked with the fleet's. None
   * by default. The nemesis leaves them alone.
   */
  hotLease?: HotLeaseOptions;
  /**
   * A lab to run in: the store is the lab's replicated cluster (`store` only names it in reports),
   * each worker runs on a lab host of its own, and the cluster faults (`partition-leader`,
   * `partition-holder`, `kill-leader`) apply. Run from a process in a network namespace of its
   * own (see `runJepsen`).
   */
  lab?: VerifyLab;
}

export interface VerifyOutcome {
  result: CheckResult;
  run: RunRecord;
  dir: string;
  history: string;
  report: string;
  notes: string[];
  /** The skew went past the store's allowance: violations are expected, the fence must stop them. */
  skewBeyond: boolean;
  /** A clock ran slow beyond rule 2's drift allowance: violations are expected, the fence must stop them. */
  driftBeyond: boolean;
  /** With `hotLease`: its cycles, writes and violations. */
  hotLease?: HotLeaseReport;
}

/** What must not outlive verify: its worker processes and the server it started. */
interface Running {
  fleet?: Fleet;
  /** The hot lease's cyclers (`hotLease`). */
  cyclers?: Fleet;
  server?: PrivateServer;
  interrupted?: boolean;
}

/**
 * `leasehold verify`: worker processes run a LeaseManager with fenced writes on the user's store
 * (or on a private server verify starts, when `store` names only a scheme) while a seeded nemesis
 * kills, stops, pauses and stalls them (and skews their clocks or makes them drift, and pauses and
 * restarts the private server); the recorded history is then checked.
 */
export async function runVerify(options: VerifyOptions): Promise<VerifyOutcome> {
  const scheme = options.lab ? undefined : privateServerScheme(options.store);
  const running: Running = {};
  const uninstall = installKill(running);
  try {
    if (scheme !== undefined) {
      const server = await startPrivateServer(
        scheme,
        (s) => (running.server = s),
        () => running.interrupted === true,
      );
      options.say(
        `verify: started a private ${server.program} (pid ${server.pid}) on 127.0.0.1:${server.port} in ${server.dir}`,
      );
    }
    return await verifyOn(options, running);
  } finally {
    running.fleet?.killAll();
    running.cyclers?.killAll();
    await running.server?.stop();
    uninstall();
  }
}

async function verifyOn(options: VerifyOptions, running: Running): Promise<VerifyOutcome> {
  const { ttlMs } = options;
  const { server } = running;
  const { lab } = options;
  const store = lab?.cluster.url ?? server?.url ?? options.store;
  const notes: string[] = [];
  const shown = redact(store);
  const run = randomBytes(3).toString('hex');
  const prefix = `verify-${run}/`;
  const resources = resourceNames(prefix, options.resources);
  const { maxClockSkewMs, clock: storeClock } = await probeStore(
    store,
    { ms: ttlMs, isDefault: options.ttlIsDefault },
    resources[0]!,
  ).catch((error: unknown) => {
    throw new CliFailure(`could not run: ${shown}: ${(error as Error).message}`, 2);
  });
  if (server)
    notes.push(
      `store: a private ${server.program} verify started on 127.0.0.1:${server.port} in ${server.dir}, stopped and removed at the end`,
    );
  else if (lab)
    notes.push(
      `store: ${lab.cluster.description}, each member and each worker on a network host of its own (${lab.cluster.members.map((m) => `${m.name} ${m.host.ip}`).join(', ')})`,
    );
  else
    for (const f of options.faults)
      if (isStoreFault(f))
        notes.push(
          `${f} skipped: verify did not start ${shown} itself, so it does not pause or restart it`,
        );
  if (!lab)
    for (const f of options.faults)
      if (isClusterFault(f))
        notes.push(`${f} skipped: it cuts network links, which verify does only in a lab`);

  const dir = resolve(options.reportDir ?? mkdtempSync(join(tmpdir(), 'leasehold-verify-')));
  mkdirSync(dir, { recursive: true });
  const downstream = join(dir, `downstream-${run}.db`);
  await createDownstream(downstream);

  const random = seededRandom(options.seed);
  const skewOn = options.faults.includes('skew');
  const skewMs = skewOn ? (options.skewMs ?? (storeClock === 'local' ? maxClockSkewMs : 1000)) : 0;
  const skewBeyond = skewOn && storeClock === 'local' && skewMs > maxClockSkewMs;
  if (skewOn && storeClock === 'store')
    notes.push(
      `skew: ${shown} decides expiry on its own clock, so worker clock offsets (up to ±${skewMs / 2} ms) must not matter`,
    );
  const driftOn = options.faults.includes('drift');
  const driftRate = driftOn ? (options.driftRate ?? DEFAULT_DRIFT_RATE) : 0;
  const driftBeyond = driftOn && driftIsBeyond(driftRate, ttlMs);
  // A drifting wall clock is stepped back as NTP would, so that it adds at most half the store's
  // allowance to the skew: the drift fault tests the rate, which rule 2's drift allowance is for,
  // not an offset growing all run long (that is the skew fault's business).
  const driftStepMs = (storeClock === 'local' ? maxClockSkewMs : 1000) / 2;
  if (driftOn)
    notes.push(
      `drift: the odd-numbered workers' clocks (w01, w03, ...) run ${formatRate(driftRate)}, wall and monotonic alike; their wall clocks are stepped back to true time each time they drift ${driftStepMs} ms`,
    );
  const heartbeatMs = Math.floor(ttlMs / 4);
  const reconcileMs = Math.round(ttlMs / 2);
  const base = {
    store,
    group: `verify-${run}`,
    // Named by the worker: thousands of names do not fit in its environment.
    resources: { prefix, count: options.resources },
    ttlMs,
    heartbeatMs,
    reconcileMs,
    downstream,
    writeEveryMs: options.writeEveryMs ?? [100, 200],
    permits: options.permits ?? 1,
    driftStepMs,
    progress: true,
    ...(options.reportEveryMs === undefined ? {} : { reportEveryMs: options.reportEveryMs }),
  };
  const fleet = new Fleet(
    WORKER_ENTRY,
    base,
    lab
      ? {
          placement: {
            wrap: (id) => lab.net.wrap(lab.net.addHost(id)),
            gone: (id) => lab.net.removeHost(id),
          },
        }
      : {},
  );
  // Outside the fleet's prefix: the managers neither want it nor hear of it.
  const hotResource = `verify-${run}-hot`;
  const cyclers = options.hotLease
    ? new Fleet(WORKER_ENTRY, {
        ...base,
        cycle: { resource: hotResource, restMs: options.hotLease.restMs ?? DEFAULT_HOT_REST_MS },
      })
    : undefined;
  const hotIds = cyclerIds(options.hotLease?.cyclers ?? 0);

  const recorder = new HistoryRecorder();
  const { records, warnings } = recorder;
  const stalls = new Map<string, FaultRecord>();
  const onEvent = (event: WorkerEvent): void => {
    recorder.record(event);
    options.onEvent?.(event);
    // A stall's record gets the times the worker measured.
    const fault = event.e === 'stalled' ? stalls.get(event.w) : undefined;
    if (event.e === 'stalled' && fault) {
      fault.at = event.at;
      fault.until = event.until;
    }
  };
  const onExit = (worker: WorkerProcess, how: string): void => {
    records.push({ type: 'worker', worker: worker.id, event: 'exit', at: hostNow(), how });
  };
  for (const f of [fleet, cyclers]) f?.on('event', onEvent).on('exit', onExit);
  const startCycler = (id: string): Promise<WorkerProcess> => {
    records.push({ type: 'worker', worker: id, event: 'start', at: hostNow(), skewMs: 0 });
    return cyclers!.start(id, 20_000);
  };

  let next = 0;
  const start = (): Promise<WorkerProcess> => {
    const id = `w${String(++next).padStart(2, '0')}`;
    const offset = skewOn ? Math.round((random() * 2 - 1) * (skewMs / 2)) : 0;
    const drifting = driftOn && drifts(next);
    const rate = drifting ? driftRate : 0;
    records.push({
      type: 'worker',
      worker: id,
      event: 'start',
      at: hostNow(),
      skewMs: offset,
      ...(rate === 0 ? {} : { driftRate: rate }),
    });
    if (skewOn)
      records.push({ type: 'fault', kind: 'skew', worker: id, at: hostNow(), skewMs: offset });
    if (drifting) records.push({ type: 'fault', kind: 'drift', worker: id, at: hostNow(), rate });
    return fleet.start(id, 20_000, { skewMs: offset, driftRate: rate });
  };

  running.fleet = fleet;
  running.cyclers = cyclers;
  let startedAt: number;
  try {
    try {
      await Promise.all([
        ...Array.from({ length: options.workers }, start),
        ...hotIds.map(startCycler),
      ]);
    } catch (error) {
      throw new CliFailure(`could not run: ${(error as Error).message}`, 2);
    }
    startedAt = hostNow();
    options.say(
      `verify: ${options.workers} workers on ${options.resources} resources${(options.permits ?? 1) > 1 ? ` of ${options.permits} permits each` : ''} of ${shown}, TTL ${ttlMs} ms, faults ${options.faults.join(',')}, seed ${options.seed}${hotIds.length > 0 ? `; ${hotIds.length} cyclers on the hot lease ${hotResource}` : ''}`,
    );
    await nemesis({
      fleet,
      server,
      lab,
      options,
      random,
      records,
      stalls,
      start,
      startedAt,
      notes,
    });
    records.push({ type: 'end', at: hostNow() });
    options.say('verify: stopping the workers (each releases its leases)');
    const stopMs = Math.max(5000, 3 * ttlMs);
    await Promise.all([fleet.stopAll(stopMs), cyclers?.stopAll(stopMs)]);
  } finally {
    fleet.killAll();
    cyclers?.killAll();
  }

  // concat, not push(...): a soak's beliefs are more than a call takes as arguments.
  const closed = records.concat(recorder.beliefs.records());
  const all = closed.concat(unreportedWrites(downstream, closed));
  const runRecord: RunRecord = {
    type: 'run',
    version: 1,
    clock: HOST_CLOCK,
    clockErrorMs: ROUNDING_MS,
    store: shown,
    storeClock,
    maxClockSkewMs,
    ttlMs,
    reconcileMs,
    livenessBoundMs: ttlMs + maxClockSkewMs + Math.ceil(1.2 * reconcileMs) + Math.max(1000, ttlMs),
    workers: options.workers,
    resources: options.resources,
    ...((options.permits ?? 1) > 1 ? { permits: options.permits } : {}),
    faults: options.faults,
    seed: options.seed,
    skewMs,
    ...(driftOn ? { driftRate, driftStepMs } : {}),
    startedAt: floorUs(startedAt),
  };
  const ordered = [runRecord, ...all.sort((a, b) => timeOf(a) - timeOf(b))];
  const history = join(dir, 'history.jsonl');
  writeHistory(history, ordered);
  const result = checkRecords(ordered);
  const hotLease = cyclers ? hotLeaseReport(ordered, result, hotResource, hotIds) : undefined;
  const report = join(dir, 'report.html');
  writeFileSync(report, htmlReport(ordered, result, { notes, skewBeyond, driftBeyond }));
  // Worker warnings and start failures quote driver messages: never let a password through.
  notes.push(
    ...warnings.slice(0, 5).map((w) => `worker warning: ${scrubPassword(w, options.store)}`),
  );
  return {
    result,
    run: runRecord,
    dir,
    history,
    report,
    notes,
    skewBeyond,
    driftBeyond,
    ...(hotLease ? { hotLease } : {}),
  };
}

/**
 * Writes the history a slice of lines at a time: a soak's history (some two million records) comes
 * within a factor of two of the longest string V8 makes.
 */
function writeHistory(path: string, records: readonly HistoryRecord[]): void {
  const fd = openSync(path, 'w');
  try {
    for (let i = 0; i < records.length; i += 10_000)
      writeSync(
        fd,
        records
          .slice(i, i + 10_000)
          .map(historyLine)
          .join(''),
      );
  } finally {
    closeSync(fd);
  }
}

function timeOf(record: HistoryRecord): number {
  switch (record.type) {
    case 'belief':
      return record.from;
    case 'run':
      return record.startedAt;
    default:
      return record.at;
  }
}

/**
 * No worker and no private server outlives verify: a Ctrl-C or SIGTERM kills the workers, stops the
 * server (SIGKILL of its tree if it takes too long) and removes its folder; a second signal, or an
 * exit from anywhere, kills both at once. Returns the uninstaller.
 */
function installKill(running: Running): () => void {
  const onExit = (): void => {
    running.fleet?.killAll();
    running.cyclers?.killAll();
    running.server?.killNow();
  };
  return killOnExit(onExit, (signal) => {
    if (running.interrupted) process.exit(2); // the exit handler kills what is left
    running.interrupted = true;
    running.fleet?.killAll();
    running.cyclers?.killAll();
    const server = running.server;
    process.stderr.write(
      `leasehold: verify interrupted by ${signal}; worker processes killed${server ? `, stopping the private ${server.program}` : ''}\n`,
    );
    if (!server) process.exit(2);
    setTimeout(() => process.exit(2), 8000).unref();
    void server.stop(3000).finally(() => process.exit(2));
  });
}
