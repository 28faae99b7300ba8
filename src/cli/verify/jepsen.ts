import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { labCommand, NetLab } from '../harness/lab/netlab.js';
import {
  labClusterUnavailable,
  startLabCluster,
  type LabClusterKind,
} from '../harness/lab/lab-cluster.js';
import type { FaultRecord } from '../harness/history-format.js';
import { diagnoseStore } from '../../core/doctor.js';
import { openQuietly } from '../open-quietly.js';
import { runVerify } from './run-verify.js';
import type { FaultName } from './faults.js';

const MAIN = fileURLToPath(new URL('./jepsen-main.js', import.meta.url));
/** Processes that take one hot lease in turns throughout a lab run (verify's `hotLease`). */
const HOT_CYCLERS = 2;

/** One Jepsen-style run: verify's fleet on a replicated store in a lab, under cluster faults. */
export interface JepsenOptions {
  cluster: LabClusterKind;
  faults: FaultName[];
  durationMs: number;
  workers: number;
  resources: number;
  ttlMs: number;
  seed: number;
  /** Where the history and report go (a new temporary folder by default). */
  reportDir?: string;
}

/** What one run found, as `bench:jepsen` and the tests read it. */
export interface JepsenSummary {
  cluster: LabClusterKind;
  /** `etcd, 3 members`. */
  store: string;
  faults: FaultName[];
  durationMs: number;
  ttlMs: number;
  seed: number;
  safe: boolean;
  /** Violations: overlapping holders, tokens out of order, stale writes accepted, lease data lost or read stale. */
  violations: { overlaps: number; tokenOrder: number; staleAccepted: number; data: number };
  /** Fenced writes: accepted, and rejected by the fence (stale tokens stopped downstream). */
  writes: { accepted: number; rejected: number; errors: number };
  /** The hot lease's grants and violations (two cyclers take it in turns all run long). */
  hotLease: { cycles: number; violations: number };
  beliefs: number;
  handovers: number;
  livenessGaps: number;
  /** What `leasehold doctor` found on the cluster before the run (id and level of each finding). */
  doctor: { id: string; level: string }[];
  /** Faults injected, by kind, and what each did. */
  injected: Record<string, number>;
  faultNotes: string[];
  notes: string[];
  dir: string;
}

/**
 * Runs verify in a lab, from a process that is in a network namespace of its own: opens the lab,
 * starts the cluster on it, runs the fleet under the faults, and takes everything down again.
 */
export async function runJepsen(
  options: JepsenOptions,
  say: (line: string) => void,
): Promise<JepsenSummary> {
  const why = labClusterUnavailable(options.cluster);
  if (why) throw new Error(`${options.cluster}: ${why}`);
  const net = NetLab.open();
  // An interrupted run exits from verify's signal handler: the lab's namespaces go with it.
  const closeLab = (): void => net.close();
  process.once('exit', closeLab);
  try {
    const cluster = await startLabCluster(net, options.cluster);
    try {
      say(`jepsen: ${cluster.description} up (${cluster.url})`);
      const doctor = await diagnose(cluster.url);
      const outcome = await runVerify({
        store: cluster.url,
        durationMs: options.durationMs,
        workers: options.workers,
        resources: options.resources,
        faults: options.faults,
        seed: options.seed,
        ttlMs: options.ttlMs,
        ttlIsDefault: false,
        ...(options.reportDir ? { reportDir: options.reportDir } : {}),
        say,
        lab: { net, cluster },
        // Contenders for one lease beside the fleet, as a singleton job has: a grant a failover
        // loses is then soon granted again, where the fleet, whose workers each want their own
        // share, may never ask for it.
        hotLease: { cyclers: HOT_CYCLERS },
      });
      const { result } = outcome;
      const faultNotes = readFileSync(outcome.history, 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('{"type":"fault"'))
        .map((line) => JSON.parse(line) as FaultRecord)
        .filter((f) => f.note !== undefined)
        .map((f) => `${f.kind}: ${f.note}`);
      return {
        cluster: options.cluster,
        store: cluster.description,
        faults: options.faults,
        durationMs: options.durationMs,
        ttlMs: options.ttlMs,
        seed: options.seed,
        safe: result.safe,
        violations: {
          overlaps: result.overlaps.length,
          tokenOrder: result.tokenOrder.length,
          staleAccepted: result.staleAccepted.length,
          data: result.data.violations.length,
        },
        writes: result.writes,
        hotLease: {
          cycles: outcome.hotLease?.cycles ?? 0,
          violations: Object.values(outcome.hotLease?.violations ?? {}).reduce((a, b) => a + b, 0),
        },
        beliefs: result.beliefs,
        handovers: result.handovers,
        livenessGaps: result.liveness.length,
        doctor,
        injected: result.faults,
        faultNotes,
        notes: outcome.notes,
        dir: outcome.dir,
      };
    } finally {
      await cluster.stop();
    }
  } finally {
    process.off('exit', closeLab);
    net.close();
  }
}

/** The doctor's findings on the store at `url` (which it opens, creating what a first open creates). */
async function diagnose(url: string): Promise<{ id: string; level: string }[]> {
  const store = await openQuietly(url);
  try {
    const { findings } = await diagnoseStore(store);
    return findings.map((f) => ({ id: f.id, level: f.level }));
  } finally {
    await store.close();
  }
}

/**
 * `runJepsen` in a child process started in a network namespace of its own (this process stays
 * where it is). Progress lines go to `say`; rejects with the child's message when it fails.
 */
export function runJepsenInLab(
  options: JepsenOptions,
  say: (line: string) => void = () => undefined,
): Promise<JepsenSummary> {
  const { file, args, env } = labCommand([process.execPath, MAIN, JSON.stringify(options)]);
  const child = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let errors = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  createInterface({ input: child.stderr }).on('line', (line) => {
    if (line.startsWith('jepsen-error: ')) errors += `${line.slice(14)}\n`;
    else say(line);
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (code === 0) resolve(JSON.parse(out) as JepsenSummary);
      else
        reject(
          new Error(
            `the lab run failed (${signal ?? `code ${code}`}): ${errors.trim() || 'no message'}`,
          ),
        );
    });
  });
}
