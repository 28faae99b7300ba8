import { formatDuration } from '../duration.js';
import { table } from '../format.js';
import type { CheckResult } from '../harness/checker.js';
import { overlapLine, staleWriteLine, tokenOrderLine } from '../harness/violation-lines.js';
import type { PhaseResult } from './scenario.js';

export interface PhaseReport extends Omit<PhaseResult, 'at' | 'endedAt'> {
  /** Milliseconds since the demo started. */
  atMs: number;
  endedAtMs: number;
}

export interface SafetyReport {
  safe: boolean;
  /** Tenures (one holder's belief in one lease) checked for overlap. */
  tenures: number;
  handovers: number;
  /** Two live owners of one resource at once (the first few). */
  overlaps: string[];
  /** Tokens that did not rise strictly per resource (the first few). */
  tokenOrder: string[];
  /** Accepted writes read back from the downstream, in commit order. */
  writesChecked: number;
  /** Accepted writes under a token lower than one already committed (the first few). */
  staleWritesAccepted: string[];
}

/** The final report; `--json` prints exactly this. */
export interface DemoReport {
  /** Safe, and every fault recovered: the exit code is 0 exactly then. */
  ok: boolean;
  safe: boolean;
  recovered: boolean;
  store: string;
  /** The store is the fresh SQLite file the demo made (no `--store`). */
  embeddedStore: boolean;
  /** Where `--dashboard` served the live page while the demo ran. */
  dashboard?: string;
  downstream: string;
  /** The folder holding the demo's files (kept for inspection). */
  dir: string;
  workers: number;
  /** Process id of every worker started, by letter. */
  pids: Record<string, number>;
  resources: number;
  ttlMs: number;
  heartbeatMs: number;
  reconcileMs: number;
  quick: boolean;
  durationMs: number;
  phases: PhaseReport[];
  safety: SafetyReport;
  totals: { writesAccepted: number; writesRejected: number; handoffs: number };
  warnings: string[];
}

const SHOWN = 10;

/** The safety part of the report, from the check of the run's history. */
export function safetyReport(result: CheckResult): SafetyReport {
  return {
    safe: result.safe,
    tenures: result.beliefs,
    handovers: result.handovers,
    overlaps: result.overlaps.slice(0, SHOWN).map(overlapLine),
    tokenOrder: result.tokenOrder.slice(0, SHOWN).map(tokenOrderLine),
    writesChecked: result.writes.accepted,
    staleWritesAccepted: result.staleAccepted.slice(0, SHOWN).map(staleWriteLine),
  };
}

export function phaseReport(phase: PhaseResult, startedAt: number): PhaseReport {
  const { at, endedAt, ...rest } = phase;
  return {
    ...rest,
    recoveryMs: round(rest.recoveryMs),
    settledMs: round(rest.settledMs),
    ...(rest.pausedMs === undefined ? {} : { pausedMs: round(rest.pausedMs)! }),
    atMs: round(at - startedAt)!,
    endedAtMs: round(endedAt - startedAt)!,
  };
}

/** Every fault recovered: its orphans re-owned (a joining worker: the fleet rebalanced). */
export function allRecovered(phases: readonly PhaseResult[]): boolean {
  return phases.every((p) => p.step === 0 || p.recoveryMs !== null);
}

export function reportText(report: DemoReport): string {
  const ms = (v: number | null): string => (v === null ? 'NO' : formatDuration(v));
  const rows = report.phases.map((p) => [
    p.step === 0 ? p.title : `(${p.step}) ${p.title}`,
    p.kind === 'start' || p.kind === 'join' ? '-' : String(p.orphans),
    p.kind === 'start' ? '-' : ms(p.recoveryMs),
    ms(p.settledMs),
    String(p.handoffs + p.releasedOnShutdown),
    String(p.writesAccepted),
    String(p.writesRejected),
  ]);
  const { safety } = report;
  const check = (ok: boolean, text: string): string => `  ${ok ? 'ok  ' : 'FAIL'}  ${text}`;
  const lines = [
    '',
    `leasehold demo report: ${report.workers} worker processes over ${report.resources} resources, TTL ${formatDuration(report.ttlMs)} (heartbeat ${formatDuration(report.heartbeatMs)}), ${formatDuration(report.durationMs)} in all`,
    '',
    table(
      ['step', 'orphaned', 'recovered in', 'settled in', 'handoffs', 'writes ok', 'rejected'],
      rows,
      [1, 2, 3, 4, 5, 6],
    ),
    '',
    'recovered in: from the fault until every lease the victim held had a new owner (start, new worker:',
    'until the fleet was balanced); settled in: until ownership last moved before the fleet stayed balanced;',
    'handoffs: leases given up for another worker (balance moves, and releases on SIGTERM).',
  ];
  const pause = report.phases.find((p) => p.kind === 'sigstop');
  if (pause) {
    lines.push(
      `SIGSTOP: worker ${pause.victim} was frozen ${formatDuration(pause.pausedMs ?? 0)}; ${pause.victimWritesRejected} writes it sent after waking carried old tokens, and the fence rejected them.`,
    );
  }
  lines.push(
    '',
    `safety verdict: ${report.safe ? 'SAFE' : 'UNSAFE'}`,
    check(
      safety.overlaps.length === 0,
      `no resource had two live owners at once: ${safety.tenures} tenures, ${safety.handovers} handovers, belief intervals never overlap`,
    ),
    ...safety.overlaps.map((v) => `        ${v}`),
    check(
      safety.staleWritesAccepted.length === 0,
      `no stale-token write accepted: ${safety.writesChecked} writes read back from the downstream in commit order, tokens never go down per resource`,
    ),
    ...safety.staleWritesAccepted.map((v) => `        ${v}`),
    check(
      safety.tokenOrder.length === 0,
      'tokens strictly increasing per resource, in acquisition order',
    ),
    ...safety.tokenOrder.map((v) => `        ${v}`),
    check(report.recovered, 'every fault recovered'),
  );
  if (report.warnings.length > 0)
    lines.push('', 'worker warnings:', ...report.warnings.map((w) => `  ${w}`));
  lines.push(
    '',
    report.embeddedStore
      ? `files kept in ${report.dir}: leases.db (the lease store: leasehold list --store sqlite:${report.dir}/leases.db) and downstream.db (table demo_writes)`
      : `files kept in ${report.dir}: downstream.db (table demo_writes)`,
  );
  return lines.join('\n');
}

function round(value: number | null): number | null {
  return value === null ? null : Math.round(value * 10) / 10;
}
