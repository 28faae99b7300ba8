import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CheckResult } from '../../src/cli/harness/checker.js';
import { parseHistory, type HistoryRecord } from '../../src/cli/harness/history-format.js';
import { runCli } from '../cli/run-cli.js';

export interface VerifyRun {
  code: number;
  stderr: string;
  out: CheckResult & { history: string; report: string; skewBeyond: boolean; notes: string[] };
  records: HistoryRecord[];
  html: string;
}

/** Runs `leasehold verify --json ... --report DIR` and reads back its findings, history and report. */
export async function verify(store: string, dir: string, args: string[]): Promise<VerifyRun> {
  const result = await runCli(['verify', '--store', store, '--json', '--report', dir, ...args], {
    timeout: 90_000,
  });
  if (result.code === 2 || result.stdout === '')
    throw new Error(`verify could not run (exit ${result.code}): ${result.stderr}`);
  const out = JSON.parse(result.stdout) as VerifyRun['out'];
  return {
    code: result.code,
    stderr: result.stderr,
    out,
    records: parseHistory(readFileSync(join(dir, 'history.jsonl'), 'utf8')),
    html: readFileSync(join(dir, 'report.html'), 'utf8'),
  };
}

/** Evidence in the history that the timed faults really hit the workers. */
export function faultEvidence(records: readonly HistoryRecord[]): {
  killed: number;
  stalledMs: number[];
  pauses: number;
} {
  return {
    killed: records.filter(
      (r) => r.type === 'worker' && r.event === 'exit' && r.how === 'signal SIGKILL',
    ).length,
    // A stall's times come from the worker itself: how long its event loop was really blocked.
    stalledMs: records.flatMap((r) =>
      r.type === 'fault' && r.kind === 'stall' && r.until !== undefined ? [r.until - r.at] : [],
    ),
    pauses: records.filter((r) => r.type === 'fault' && r.kind === 'pause').length,
  };
}
