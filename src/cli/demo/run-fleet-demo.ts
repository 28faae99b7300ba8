import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { redact } from '../../core/store-url.js';
import { formatDuration } from '../duration.js';
import { openQuietly } from '../open-quietly.js';
import { checkRecords } from '../harness/checker.js';
import { resourceNames, type DemoSettings } from '../harness/demo-settings.js';
import { createDownstream, unreportedWrites } from '../harness/downstream.js';
import { Fleet } from '../harness/fleet.js';
import { hostNow } from '../harness/host-clock.js';
import { killOnExit } from '../harness/kill-on-exit.js';
import { probeStore } from '../harness/probe-store.js';
import { LiveView, type ViewMode } from './live-view.js';
import { Monitor } from './monitor.js';
import { allRecovered, phaseReport, safetyReport, type DemoReport } from './report.js';
import { runScenario } from './scenario.js';
import { sqlitePath } from './sqlite-lock.js';
import { startDashboard } from '../dashboard/server.js';

const WORKER_ENTRY = fileURLToPath(new URL('../harness/worker.js', import.meta.url));

export interface FleetDemoOptions {
  settings: DemoSettings;
  /** `--store`; a fresh SQLite file in a temp folder when absent. */
  store?: string;
  /** `--ttl` was not given: `settings.ttlMs` is the default. */
  ttlIsDefault?: boolean;
  mode: ViewMode;
  /** Serve `leasehold dashboard` on the demo's store on this port while it runs (`0`: any free one). */
  dashboardPort?: number;
}

/**
 * The fleet demo: worker processes sharing leases on one store and writing through a fence, taken
 * through four faults; returns the report, with the safety verdict from the recorded history.
 */
export async function runFleetDemo({
  settings,
  store,
  ttlIsDefault,
  mode,
  dashboardPort,
}: FleetDemoOptions): Promise<DemoReport> {
  const startedAt = hostNow();
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-demo-'));
  const url = store ?? `sqlite:${join(dir, 'leases.db')}?synchronous=normal`;
  const downstream = join(dir, 'downstream.db');
  const run = randomBytes(3).toString('hex');
  const prefix = `demo-${run}/`;
  const resources = resourceNames(prefix, settings.resources);

  // Opening the store once here checks the URL, the driver and the connection, and creates a
  // SQLite schema before several processes race to. Names unique to this run keep runs on a shared store apart.
  await probeStore(url, { ms: settings.ttlMs, isDefault: ttlIsDefault }, resources[0]!);
  await createDownstream(downstream);

  // Workers named by letter (`A`), owning as `worker-A`, on the host's clock, exclusive leases.
  const fleet = new Fleet(
    WORKER_ENTRY,
    {
      store: url,
      group: `demo-${run}`,
      resources,
      ttlMs: settings.ttlMs,
      heartbeatMs: settings.heartbeatMs,
      reconcileMs: settings.reconcileMs,
      downstream,
      writeEveryMs: settings.writeEveryMs,
      driftStepMs: 0,
      permits: 1,
      progress: false,
    },
    { owner: (letter) => `worker-${letter}`, joining: 'join the fleet' },
  );
  const monitor = new Monitor(fleet, resources);
  const view = new LiveView(mode, monitor, fleet.workers, startedAt);
  view.header(
    `leasehold demo: ${settings.workers} worker processes share ${settings.resources} resources; TTL ${formatDuration(settings.ttlMs)}, heartbeat ${formatDuration(settings.heartbeatMs)}, reconcile ~${formatDuration(settings.reconcileMs)}`,
  );
  view.header(
    `store: ${redact(url)}${store === undefined ? ' (a fresh temp file; your ./leasehold.db is untouched)' : ''}`,
  );
  view.header(
    `downstream: ${downstream} (every lease writes a row every 100-200 ms through a SqliteFence)`,
  );

  // The dashboard reads the store through a connection of its own, so it can be watched live.
  const watched = dashboardPort === undefined ? undefined : await openQuietly(url);
  const dashboard =
    watched &&
    (await startDashboard({ store: watched, storeUrl: url, port: dashboardPort }).catch(
      async (error: unknown) => {
        await watched.close();
        throw error;
      },
    ));
  if (dashboard) view.header(`dashboard: ${dashboard.url} (live while the demo runs)`);

  const release = killOnExit(
    () => fleet.killAll(),
    (signal) => {
      fleet.killAll();
      view.stop();
      process.stderr.write(`leasehold: demo interrupted by ${signal}; worker processes killed\n`);
      process.exit(signal === 'SIGINT' ? 130 : signal === 'SIGHUP' ? 129 : 143);
    },
  );
  let phases;
  view.start();
  try {
    phases = await runScenario({
      fleet,
      monitor,
      settings,
      sqliteFiles: [downstream, sqlitePath(url)].filter((p): p is string => p !== undefined),
      phase: (title, detail) => view.phase(title, detail),
      say: (text) => view.say(text),
    });
    view.phase('stopping', 'SIGTERM to every worker: each releases its leases and exits');
    await fleet.stopAll(5000);
    view.say(`all workers stopped`);
  } finally {
    fleet.killAll();
    view.stop();
    release();
    await dashboard?.close();
    await watched?.close();
  }

  // The history: every belief, every fenced write reported, and those committed but not reported
  // (a worker killed right after its commit), so every committed write is checked in commit order.
  const records = monitor.history.history();
  const safety = safetyReport(checkRecords([...records, ...unreportedWrites(downstream, records)]));
  const recovered = allRecovered(phases);
  const { totals } = monitor;
  return {
    ok: safety.safe && recovered,
    safe: safety.safe,
    recovered,
    store: redact(url),
    embeddedStore: store === undefined,
    ...(dashboard ? { dashboard: dashboard.url } : {}),
    downstream,
    dir,
    workers: settings.workers,
    pids: Object.fromEntries([...fleet.workers.values()].map((w) => [w.id, w.pid])),
    resources: settings.resources,
    ttlMs: settings.ttlMs,
    heartbeatMs: settings.heartbeatMs,
    reconcileMs: settings.reconcileMs,
    quick: settings.quick,
    durationMs: Math.round(hostNow() - startedAt),
    phases: phases.map((p) => phaseReport(p, startedAt)),
    safety,
    totals: {
      writesAccepted: totals.writesAccepted,
      writesRejected: totals.writesRejected,
      handoffs: totals.handoffs,
    },
    warnings: monitor.warnings.slice(0, 10),
  };
}
