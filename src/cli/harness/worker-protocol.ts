/**
 * What demo and verify tell each worker process they start, as JSON in an environment variable
 * (never on the command line, where `ps` would show a store password), and what workers report
 * back, one JSON object a line on stdout. Every time is on the host clock (`host-clock.ts`).
 */
export interface WorkerConfig {
  /** The worker's id, as its events name it. */
  id: string;
  /** Its owner id in lease records; the id when absent. */
  owner?: string;
  store: string;
  group: string;
  /**
   * The resources, or how to name them (`resourceNames(prefix, count)`): a list of thousands of
   * names does not fit in one environment variable (E2BIG past 128 KiB).
   */
  resources: string[] | { prefix: string; count: number };
  ttlMs: number;
  heartbeatMs: number;
  reconcileMs: number;
  /** The downstream SQLite file the fenced writes go to. */
  downstream: string;
  writeEveryMs: readonly [number, number];
  /** This worker's wall-clock offset, in ms (the `skew` fault). */
  skewMs: number;
  /** This worker's clock rate error (the `drift` fault): `-0.02` runs 2 % slow; 0 keeps the host's. */
  driftRate: number;
  /** A drifting wall clock is stepped back to true time each time it has drifted this far, in ms. */
  driftStepMs: number;
  /** `--permits`: each resource a counting lease of this many permits (1: the manager, exclusive leases). */
  permits: number;
  /** Keep a progress count as lease data after each fenced write, where the store keeps lease data. */
  progress: boolean;
  /** Report the process's resources (a `process` event) this often, in ms; absent: never. */
  reportEveryMs?: number;
  /** A hot-lease cycler instead of a fleet member (verify's `hotLease`); absent: a fleet member. */
  cycle?: HotCycle;
}

/**
 * What a hot-lease cycler does: no manager; one loop that acquires `resource` (waiting while
 * another cycler holds it), makes one fenced write under it, releases it, rests a random time
 * within `restMs` and contends again, until it is stopped.
 */
export interface HotCycle {
  resource: string;
  restMs: readonly [number, number];
}

export const WORKER_ENV = 'LEASEHOLD_HARNESS_WORKER';

/** The progress a worker keeps as lease data: the count `n`, written under `token`. */
export interface Progress {
  token: number;
  n: number;
}

interface Fact {
  w: string;
  resource: string;
  token: number;
  at: number;
}

export type WorkerEvent =
  | { e: 'ready'; w: string; pid: number; at: number }
  /**
   * The lease reached the holder's code: it believes from `at` until `until` (its deadline). On a
   * store with lease data, `read` is the progress the grant carried (`null`: none yet).
   */
  | (Fact & { e: 'acquired'; until: number; read?: Progress | null })
  /** A renewal landed: the deadline is now `until`. */
  | (Fact & { e: 'renewed'; until: number })
  /** The release is about to leave: the belief ended at `at`. */
  | (Fact & { e: 'released'; until: number })
  /** The holder noticed the loss at `at`; its belief ended at `until` if that is earlier. */
  | (Fact & { e: 'lost'; until: number })
  /** The manager is handing the lease to a less loaded worker (a `released` follows). */
  | (Fact & { e: 'handoff'; reason: string })
  | (Fact & { e: 'write'; outcome: 'accepted' | 'rejected' | 'error'; commit?: number })
  /** A progress write as lease data (`writeData`): `landed` when the store took it, at `at`. */
  | (Fact & { e: 'data'; n: number; outcome: 'landed' | 'refused' | 'error' })
  /** The event loop was blocked from `at` to `until` (the `stall` fault). */
  | { e: 'stalled'; w: string; at: number; until: number }
  /**
   * The process's resources (`reportEveryMs`): its resident set in bytes, its open file
   * descriptors, and the longest event-loop delay since the last report, in ms.
   */
  | { e: 'process'; w: string; at: number; rssBytes: number; fds: number; loopMaxMs: number }
  | { e: 'warn'; w: string; at: number; message: string };

/** The events about one lease. */
export type LeaseEvent = Extract<WorkerEvent, { resource: string }>;

/** A message to a worker over IPC. */
export interface StallMessage {
  stallMs: number;
}

/** Reads one line of a worker's output; `undefined` for anything that is not an event. */
export function parseEvent(line: string): WorkerEvent | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value = JSON.parse(line) as { e?: unknown; w?: unknown };
    return typeof value.e === 'string' && typeof value.w === 'string'
      ? (value as WorkerEvent)
      : undefined;
  } catch {
    return undefined;
  }
}
