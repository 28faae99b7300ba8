import type { CheckResult } from '../harness/checker.js';
import type { BeliefRecord, HistoryRecord } from '../harness/history-format.js';

/**
 * A hot lease beside verify's fleet (`npm run bench:soak`): cycler processes that acquire one
 * resource, make one fenced write under it and release it, over and over, contending with each
 * other. Their holds are beliefs and their writes are writes of the one history the checker reads.
 */
export interface HotLeaseOptions {
  /** Cycler processes contending for the hot lease. */
  cyclers: number;
  /**
   * Each cycler's rest between its release and its next acquire, in ms (a random time within).
   * @default [0, 10]
   */
  restMs?: readonly [number, number];
}

export const DEFAULT_HOT_REST_MS: readonly [number, number] = Object.freeze([0, 10]) as readonly [
  number,
  number,
];

/** What the history says of the hot lease. */
export interface HotLeaseReport {
  resource: string;
  /** The cyclers' worker ids, as their events and the history name them. */
  cyclers: string[];
  /** Grants of the hot lease: its beliefs in the history. */
  grants: number;
  /** Grants the holder gave back itself (acquire → write → release): the cycles. */
  cycles: number;
  /** Cycles per cycler. */
  byCycler: Record<string, number>;
  /** Grants that ended otherwise: lost, at the holder's deadline, or in a process that died. */
  notReleased: number;
  /** From the first grant to the end of the last belief, in ms. */
  spanMs: number;
  /** Cycles per second over that span. */
  cyclesPerSecond: number;
  /** Its fenced writes. */
  writes: { accepted: number; rejected: number; errors: number };
  /** The checker's findings on the hot lease alone (also counted in the run's). */
  violations: { overlaps: number; tokenOrder: number; staleAccepted: number };
}

/** The cyclers' worker ids: `h01`, `h02`, ... */
export function cyclerIds(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `h${String(i + 1).padStart(2, '0')}`);
}

/** Reads the hot lease's cycles, writes and violations out of a checked history. */
export function hotLeaseReport(
  records: readonly HistoryRecord[],
  result: CheckResult,
  resource: string,
  cyclers: string[],
): HotLeaseReport {
  const beliefs = records.filter(
    (r): r is BeliefRecord => r.type === 'belief' && r.resource === resource,
  );
  const released = beliefs.filter((b) => b.how === 'released');
  const byCycler = Object.fromEntries(cyclers.map((id) => [id, 0]));
  for (const b of released) byCycler[b.owner] = (byCycler[b.owner] ?? 0) + 1;
  // A loop, not Math.max(...): a soak's hot lease has hundreds of thousands of beliefs.
  let first = Infinity;
  let last = -Infinity;
  for (const b of beliefs) {
    first = Math.min(first, b.from);
    last = Math.max(last, b.to);
  }
  const spanMs = beliefs.length === 0 ? 0 : last - first;
  const writes = { accepted: 0, rejected: 0, errors: 0 };
  for (const r of records)
    if (r.type === 'write' && r.resource === resource)
      writes[r.outcome === 'error' ? 'errors' : r.outcome]++;
  return {
    resource,
    cyclers,
    grants: beliefs.length,
    cycles: released.length,
    byCycler,
    notReleased: beliefs.length - released.length,
    spanMs: Math.round(spanMs),
    cyclesPerSecond: spanMs > 0 ? Math.round((released.length / spanMs) * 1e5) / 100 : 0,
    writes,
    violations: {
      overlaps: result.overlaps.filter((o) => o.resource === resource).length,
      tokenOrder: result.tokenOrder.filter((t) => t.resource === resource).length,
      staleAccepted: result.staleAccepted.filter((s) => s.resource === resource).length,
    },
  };
}
