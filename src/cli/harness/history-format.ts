/**
 * The history of a demo or verify run (verify writes it to a file, one JSON object a line: JSONL).
 * Every time is in ms on one clock shared by the processes of the host (see `host-clock.ts`); the
 * `run` line says which.
 */

/** The first line: what was run, on which clock, and the bounds the checker applies. */
export interface RunRecord {
  type: 'run';
  /** Format version. */
  version: 1;
  /** The clock every time in the file is on. */
  clock: string;
  /** The most a recorded time can be off, in ms, always in the direction that widens a belief. */
  clockErrorMs: number;
  store: string;
  /** Whose clock decides expiry: the store's, or each client's (`local`). */
  storeClock: 'store' | 'local';
  maxClockSkewMs: number;
  ttlMs: number;
  reconcileMs: number;
  /** A wanted resource unowned longer than this while a worker was live is a liveness gap. */
  livenessBoundMs: number;
  workers: number;
  resources: number;
  /** `--permits`: at most this many owners of a resource at once, one per permit record. @default 1 */
  permits?: number;
  faults: string[];
  seed: number;
  /** The largest clock offset given to a worker (0 without the `skew` fault). */
  skewMs: number;
  /** The `drift` fault: the rate the drifting workers' clocks ran at (`-0.2`: 20 % slow). */
  driftRate?: number;
  /** The `drift` fault: a drifting wall clock was stepped back to true time each time it drifted this far. */
  driftStepMs?: number;
  /** When the first workers had all joined. */
  startedAt: number;
}

/** One holder's belief in one lease: from the acquire answer until its release or its own deadline. */
export interface BeliefRecord {
  type: 'belief';
  resource: string;
  owner: string;
  token: number;
  from: number;
  to: number;
  /** `released`, `lost`, `deadline` (the deadline came first), `died` (killed: its last deadline). */
  how: string;
  /** On a store with lease data: the progress the grant carried (`null`: none yet). */
  read?: { token: number; n: number } | null;
}

/**
 * A progress write as lease data: the holder of `token` wrote count `n`; `landed` when the store
 * acknowledged it by `at`.
 */
export interface DataRecord {
  type: 'data';
  resource: string;
  owner: string;
  token: number;
  n: number;
  at: number;
  outcome: 'landed' | 'refused' | 'error';
}

/** One fenced write attempt. `commit` orders accepted writes as the downstream committed them. */
export interface WriteRecord {
  type: 'write';
  resource: string;
  owner: string;
  token: number;
  at: number;
  outcome: 'accepted' | 'rejected' | 'error';
  commit?: number;
}

/** A fault the nemesis injected; `until` for one that lasts (pause, stall). */
export interface FaultRecord {
  type: 'fault';
  kind: string;
  worker?: string;
  at: number;
  until?: number;
  /** A clock offset (`skew`), or a note. */
  skewMs?: number;
  /** A clock's rate error (`drift`): `0.005` runs 0.5 % fast, `-0.2` 20 % slow. */
  rate?: number;
  note?: string;
}

/** A worker process started (`start`), joined (`ready`) or ended (`exit`). */
export interface WorkerRecord {
  type: 'worker';
  worker: string;
  event: 'start' | 'ready' | 'exit';
  at: number;
  pid?: number;
  skewMs?: number;
  /** Its clock's rate error, when it drifts. */
  driftRate?: number;
  /** For `exit`: how (`signal SIGKILL`, `code 0`, ...). */
  how?: string;
}

/** The last line: when the chaos stopped (the graceful shutdown of the fleet follows). */
export interface EndRecord {
  type: 'end';
  at: number;
}

export type HistoryRecord =
  RunRecord | BeliefRecord | WriteRecord | DataRecord | FaultRecord | WorkerRecord | EndRecord;

export function historyLine(record: HistoryRecord): string {
  return `${JSON.stringify(record)}\n`;
}

const NEEDS: Record<HistoryRecord['type'], Record<string, 'string' | 'number'>> = {
  run: { ttlMs: 'number', livenessBoundMs: 'number', startedAt: 'number' },
  belief: { resource: 'string', owner: 'string', token: 'number', from: 'number', to: 'number' },
  write: { resource: 'string', owner: 'string', token: 'number', at: 'number', outcome: 'string' },
  data: {
    resource: 'string',
    owner: 'string',
    token: 'number',
    n: 'number',
    at: 'number',
    outcome: 'string',
  },
  fault: { kind: 'string', at: 'number' },
  worker: { worker: 'string', event: 'string', at: 'number' },
  end: { at: 'number' },
};

/**
 * Parses a history file. Throws an `Error` naming the line for a line that is not JSON, has an
 * unknown `type`, or lacks a field the checker needs; blank lines are skipped.
 */
export function parseHistory(text: string): HistoryRecord[] {
  const records: HistoryRecord[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new Error(`line ${i + 1} is not JSON`);
    }
    const type = (value as { type?: unknown } | null)?.type;
    const needs = typeof type === 'string' ? NEEDS[type as HistoryRecord['type']] : undefined;
    if (!needs || typeof value !== 'object' || Array.isArray(value))
      throw new Error(`line ${i + 1} is not a history record (no known "type")`);
    for (const [field, kind] of Object.entries(needs)) {
      const got = (value as Record<string, unknown>)[field];
      if (typeof got !== kind || (kind === 'number' && !Number.isFinite(got)))
        throw new Error(`line ${i + 1} (${type as string}) needs a ${kind} "${field}"`);
    }
    records.push(value as HistoryRecord);
  }
  return records;
}
