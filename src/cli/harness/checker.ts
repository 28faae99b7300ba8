import { parsePermit } from '../../core/permits.js';
import type {
  BeliefRecord,
  DataRecord,
  FaultRecord,
  HistoryRecord,
  RunRecord,
  WriteRecord,
} from './history-format.js';

/** Two owners believing in one resource at once. */
export interface Overlap {
  resource: string;
  first: { owner: string; token: number; from: number; to: number };
  second: { owner: string; token: number; from: number; to: number };
  /** How long both believed, in ms. */
  ms: number;
}

/** A successor's token not above its predecessor's. */
export interface TokenOrderViolation {
  resource: string;
  before: { owner: string; token: number; from: number };
  after: { owner: string; token: number; from: number };
}

/** More owners of one name believing at once than it has permits (`--permits`). */
export interface TooMany {
  /** The name (the counting lease), not a permit's record. */
  resource: string;
  permits: number;
  /** When the excess began, and the beliefs held then. */
  at: number;
  holders: { owner: string; permit: number; token: number; from: number; to: number }[];
}

/** A fenced write accepted under a token lower than one already accepted for the resource. */
export interface StaleAccepted {
  resource: string;
  owner: string;
  token: number;
  at: number;
  /** The higher token accepted before it. */
  after: number;
}

/**
 * Progress kept as lease data that breaks the guarantee: a grant that read a value written under
 * its own token or a later one (`stale-read`), a value under an older token landing after a newer
 * grant read (`late-write`: the newer grant read less than it), or a grant reading less than an
 * earlier grant did (`backwards`).
 */
export interface DataViolation {
  resource: string;
  kind: 'stale-read' | 'late-write' | 'backwards';
  /** The grant that saw it. */
  grant: { owner: string; token: number; from: number; read: number };
  /** The other side: the write that landed, or the earlier grant. */
  other: { owner: string; token: number; n: number; at: number };
}

/** A wanted resource unowned longer than the bound while a worker was live. */
export interface LivenessGap {
  resource: string;
  from: number;
  to: number;
  /** The part of the gap during which some worker was live, in ms. */
  ms: number;
}

export interface Latencies {
  count: number;
  p50: number | null;
  p99: number | null;
  max: number | null;
}

export interface CheckResult {
  safe: boolean;
  overlaps: Overlap[];
  tokenOrder: TokenOrderViolation[];
  /** With `--permits N`: instants when more than N owners believed in one name. */
  tooMany: TooMany[];
  /** The permits per resource the run used (1: exclusive leases). */
  permits: number;
  /** The most owners of one resource (of its permits together) believing at one instant. */
  mostOwners: number;
  staleAccepted: StaleAccepted[];
  /** Progress kept as lease data (on stores that keep it): writes and violations. */
  data: { landed: number; refused: number; errors: number; violations: DataViolation[] };
  liveness: LivenessGap[];
  beliefs: number;
  handovers: number;
  writes: { accepted: number; rejected: number; errors: number };
  /** Faults injected, by kind. */
  faults: Record<string, number>;
  takeover: { kill: Latencies; stop: Latencies };
  livenessBoundMs: number | null;
}

/**
 * Checks a history: safety (no overlapping beliefs of two owners, tokens strictly increasing across
 * successive owners, no accepted write under a token lower than one accepted before), liveness
 * gaps (reported apart from safety), and takeover latencies after kill and graceful stop.
 */
export function checkRecords(records: readonly HistoryRecord[]): CheckResult {
  const run = records.find((r): r is RunRecord => r.type === 'run');
  const beliefs = records.filter((r): r is BeliefRecord => r.type === 'belief');
  const writes = records.filter((r): r is WriteRecord => r.type === 'write');
  const faults = records.filter((r): r is FaultRecord => r.type === 'fault');
  const byResource = groupBy(beliefs, (b) => b.resource);
  const overlaps: Overlap[] = [];
  const tokenOrder: TokenOrderViolation[] = [];
  let handovers = 0;
  for (const [resource, list] of byResource) {
    list.sort((a, b) => a.from - b.from || a.token - b.token);
    // Each belief against every earlier one still running when it began. An earlier belief that
    // ended by then ended before every later one began too, so it is dropped: a lease cycled
    // hundreds of thousands of times stays a linear walk.
    let running: BeliefRecord[] = [];
    for (const next of list) {
      running = running.filter((earlier) => earlier.to > next.from);
      for (const earlier of running) {
        if (earlier.owner !== next.owner) {
          overlaps.push({
            resource,
            first: pick(earlier),
            second: pick(next),
            ms: Math.min(earlier.to, next.to) - next.from,
          });
        }
      }
      running.push(next);
    }
    // Successive owners, in the order their beliefs began: each token above the one before.
    for (let i = 1; i < list.length; i++) {
      const before = list[i - 1]!;
      const after = list[i]!;
      if (before.owner !== after.owner) handovers++;
      if (after.token <= before.token)
        tokenOrder.push({
          resource,
          before: { owner: before.owner, token: before.token, from: before.from },
          after: { owner: after.owner, token: after.token, from: after.from },
        });
    }
  }
  const staleAccepted = staleWrites(writes);
  const dataRecords = records.filter((r): r is DataRecord => r.type === 'data');
  const dataViolations = progressViolations(byResource, dataRecords);
  const permits = run?.permits ?? 1;
  // Per permit record above; per name here: never more than N at once, and (liveness) a name is
  // served while any of its permits is held.
  const byName = groupBy(beliefs, (b) => parsePermit(b.resource).name);
  const { tooMany, most: mostOwners } = excess(byName, permits);
  const startedAt = run?.startedAt;
  const endAt = records.find((r) => r.type === 'end')?.at;
  const bound = run?.livenessBoundMs ?? null;
  const liveness =
    bound === null || startedAt === undefined
      ? []
      : livenessGaps(
          [...byName].map(([name, list]): [string, BeliefRecord[]] => [
            name,
            [...list].sort((a, b) => a.from - b.from),
          ]),
          liveIntervals(records, endAt),
          bound,
          startedAt,
          endAt,
        );
  return {
    safe:
      overlaps.length === 0 &&
      tokenOrder.length === 0 &&
      tooMany.length === 0 &&
      staleAccepted.length === 0 &&
      dataViolations.length === 0,
    overlaps,
    tokenOrder,
    tooMany,
    permits,
    mostOwners,
    staleAccepted,
    liveness,
    beliefs: beliefs.length,
    handovers,
    data: {
      landed: dataRecords.filter((d) => d.outcome === 'landed').length,
      refused: dataRecords.filter((d) => d.outcome === 'refused').length,
      errors: dataRecords.filter((d) => d.outcome === 'error').length,
      violations: dataViolations,
    },
    writes: {
      accepted: writes.filter((w) => w.outcome === 'accepted').length,
      rejected: writes.filter((w) => w.outcome === 'rejected').length,
      errors: writes.filter((w) => w.outcome === 'error').length,
    },
    faults: countBy(faults, (f) => f.kind),
    takeover: {
      kill: takeovers(faults, 'kill', byResource),
      stop: takeovers(faults, 'stop', byResource),
    },
    livenessBoundMs: bound,
  };
}

/**
 * Accepted writes per resource in the order the downstream committed them (`commit`, else `at`):
 * a token below the highest accepted before it is a stale write the fence let through.
 */
function staleWrites(writes: readonly WriteRecord[]): StaleAccepted[] {
  const accepted = writes
    .filter((w) => w.outcome === 'accepted')
    .sort((a, b) => (a.commit ?? a.at) - (b.commit ?? b.at) || a.at - b.at);
  const highest = new Map<string, number>();
  const stale: StaleAccepted[] = [];
  for (const w of accepted) {
    const seen = highest.get(w.resource) ?? 0;
    if (w.token < seen)
      stale.push({ resource: w.resource, owner: w.owner, token: w.token, at: w.at, after: seen });
    else highest.set(w.resource, w.token);
  }
  return stale;
}

/**
 * The lease-data guarantee, per record: each holder counts on from the progress its grant read,
 * so the values that land are strictly increasing in landing order exactly when no write under an
 * older token lands after a newer grant. Hence every acknowledged write under a token below a
 * grant's is at most what that grant read, a grant never reads a value of its own token or a
 * later one, and reads never go down from grant to grant.
 */
function progressViolations(
  byResource: Map<string, BeliefRecord[]>,
  dataRecords: readonly DataRecord[],
): DataViolation[] {
  const out: DataViolation[] = [];
  const landed = groupBy(
    dataRecords.filter((d) => d.outcome === 'landed'),
    (d) => d.resource,
  );
  for (const [resource, list] of byResource) {
    const grants = list
      .filter((b) => b.read !== undefined)
      .sort((a, b) => a.token - b.token || a.from - b.from);
    let previous: BeliefRecord | undefined;
    for (const g of grants) {
      const read = g.read?.n ?? 0;
      const grant = { owner: g.owner, token: g.token, from: g.from, read };
      if (g.read && g.read.token >= g.token)
        out.push({
          resource,
          kind: 'stale-read',
          grant,
          other: { owner: '?', token: g.read.token, n: g.read.n, at: g.from },
        });
      for (const w of landed.get(resource) ?? [])
        if (w.token < g.token && w.n > read)
          out.push({
            resource,
            kind: 'late-write',
            grant,
            other: { owner: w.owner, token: w.token, n: w.n, at: w.at },
          });
      const before = previous?.read?.n ?? 0;
      if (previous && previous.token < g.token && read < before)
        out.push({
          resource,
          kind: 'backwards',
          grant,
          other: { owner: previous.owner, token: previous.token, n: before, at: previous.from },
        });
      previous = g;
    }
  }
  return out;
}

/** When each worker was live (joined, not yet ended), as `[from, to]` on the host clock. */
function liveIntervals(
  records: readonly HistoryRecord[],
  endAt: number | undefined,
): [number, number][] {
  const open = new Map<string, number>();
  const out: [number, number][] = [];
  for (const r of records) {
    if (r.type === 'worker' && r.event === 'ready') open.set(r.worker, r.at);
    const ended =
      (r.type === 'worker' && r.event === 'exit') ||
      (r.type === 'fault' && r.kind === 'kill' && r.worker !== undefined);
    const worker = r.type === 'worker' ? r.worker : r.type === 'fault' ? r.worker : undefined;
    if (ended && worker !== undefined && open.has(worker)) {
      out.push([open.get(worker)!, r.at]);
      open.delete(worker);
    }
  }
  for (const from of open.values()) out.push([from, endAt ?? Infinity]);
  return out;
}

/** The measure of `[from, to]` covered by the union of `intervals`. */
function covered(intervals: readonly [number, number][], from: number, to: number): number {
  const parts = intervals
    .map(([a, b]): [number, number] => [Math.max(a, from), Math.min(b, to)])
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  let total = 0;
  let reach = from;
  for (const [a, b] of parts) {
    if (b <= reach) continue;
    total += b - Math.max(a, reach);
    reach = b;
  }
  return total;
}

/** Each instant a name had more than `permits` beliefs, with the beliefs held then (one per excess). */
function excess(
  byName: Map<string, BeliefRecord[]>,
  permits: number,
): { tooMany: TooMany[]; most: number } {
  const out: TooMany[] = [];
  let most = 0;
  for (const [resource, list] of byName) {
    const starts = [...list].sort((a, b) => a.from - b.from);
    // The beliefs begun by each start and not yet ended, in start order; walked once.
    let begun = 0;
    let running: BeliefRecord[] = [];
    for (const b of starts) {
      while (begun < starts.length && starts[begun]!.from <= b.from) running.push(starts[begun++]!);
      // Beliefs are closed intervals' open ends: one ending exactly when another starts is no overlap.
      running = running.filter((o) => o.to > b.from);
      const held = running;
      most = Math.max(most, held.length);
      if (held.length > permits && permits > 1)
        out.push({
          resource,
          permits,
          at: b.from,
          holders: held.map((o) => ({
            owner: o.owner,
            permit: parsePermit(o.resource).permit,
            token: o.token,
            from: o.from,
            to: o.to,
          })),
        });
    }
  }
  return { tooMany: out, most };
}

function livenessGaps(
  byResource: Iterable<[string, BeliefRecord[]]>,
  live: readonly [number, number][],
  bound: number,
  startedAt: number,
  endAt: number | undefined,
): LivenessGap[] {
  const gaps: LivenessGap[] = [];
  for (const [resource, list] of byResource) {
    let reach = startedAt;
    const check = (to: number): void => {
      if (to <= reach) return;
      const ms = covered(live, reach, to);
      if (ms > bound) gaps.push({ resource, from: reach, to, ms });
    };
    for (const b of list) {
      check(b.from);
      reach = Math.max(reach, b.to);
    }
    if (endAt !== undefined) check(endAt);
  }
  return gaps;
}

/**
 * For each kill (or graceful stop) of a worker: for every resource it believed in at that instant,
 * the time until another owner's belief began.
 */
function takeovers(
  faults: readonly FaultRecord[],
  kind: string,
  byResource: Map<string, BeliefRecord[]>,
): Latencies {
  const samples: number[] = [];
  for (const fault of faults) {
    if (fault.kind !== kind || fault.worker === undefined) continue;
    for (const list of byResource.values()) {
      const held = list.find(
        (b) => b.owner === fault.worker && b.from <= fault.at && b.to > fault.at,
      );
      if (!held) continue;
      const next = list.find((b) => b.owner !== fault.worker && b.from >= fault.at);
      if (next) samples.push(next.from - fault.at);
    }
  }
  return latencies(samples);
}

export function latencies(samples: readonly number[]): Latencies {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (p: number): number | null =>
    sorted.length === 0
      ? null
      : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
  return { count: sorted.length, p50: rank(0.5), p99: rank(0.99), max: sorted.at(-1) ?? null };
}

function pick(b: BeliefRecord): Overlap['first'] {
  return { owner: b.owner, token: b.token, from: b.from, to: b.to };
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
}
