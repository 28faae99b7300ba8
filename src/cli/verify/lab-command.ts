import { CliFailure, printJson } from '../output.js';
import { terminalSafe } from '../escape.js';
import {
  LAB_CLUSTERS,
  labClusterUnavailable,
  type LabClusterKind,
} from '../harness/lab/lab-cluster.js';
import { netlabUnavailable } from '../harness/lab/netlab.js';
import type { FaultName } from './faults.js';
import { runJepsenInLab, type JepsenOptions } from './jepsen.js';

/**
 * `leasehold verify --store lab:SETUP`: verify's fleet on a replicated store in a lab (every
 * member and every worker on a network namespace of its own), under the faults asked for,
 * including those that cut links; prints what the doctor found, what each fault did and the
 * verdict. Exit 0 SAFE, 1 a violation, 2 could not run.
 */
export async function runLab(
  setup: string,
  options: Omit<JepsenOptions, 'cluster' | 'faults'> & { faults: FaultName[]; json: boolean },
): Promise<void> {
  if (!(LAB_CLUSTERS as readonly string[]).includes(setup))
    throw new CliFailure(`--store lab:${setup}: known setups: ${LAB_CLUSTERS.join(', ')}`, 2);
  const cluster = setup as LabClusterKind;
  const why = netlabUnavailable() ?? labClusterUnavailable(cluster);
  if (why) throw new CliFailure(`--store lab:${setup}: cannot run here: ${why}`, 2);
  const { json, ...rest } = options;
  const summary = await runJepsenInLab({ ...rest, cluster }, (line) => {
    if (!json) process.stderr.write(`${line}\n`);
  }).catch((error: unknown) => {
    throw new CliFailure(`could not run: ${(error as Error).message}`, 2);
  });
  if (json) printJson(summary);
  else {
    const { violations, writes } = summary;
    const lines = [
      ...summary.notes.map((n) => `note: ${terminalSafe(n)}`),
      ...summary.faultNotes.map((n) => `fault: ${terminalSafe(n)}`),
      `doctor: ${summary.doctor.length === 0 ? 'nothing found' : summary.doctor.map((f) => `${f.id} (${f.level})`).join(', ')}`,
      `history: ${summary.dir}/history.jsonl`,
      `report:  ${summary.dir}/report.html`,
      `seed:    ${summary.seed} (rerun with --seed ${summary.seed})`,
      `fenced writes: ${writes.accepted} accepted, ${writes.rejected} stale rejected`,
      summary.safe
        ? `verdict: SAFE (${summary.store})`
        : `verdict: UNSAFE (${summary.store}): ${violations.overlaps} overlaps, ${violations.tokenOrder} tokens out of order, ${violations.data} lease-data violations, ${violations.staleAccepted} stale writes accepted`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (!summary.safe)
    throw new CliFailure('the safety check failed (see the report)', 1, { reported: true });
}
