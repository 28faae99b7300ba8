import { hostNow } from '../harness/host-clock.js';

/**
 * Milliseconds on the host's CLOCK_MONOTONIC (`process.hrtime.bigint()`), one kernel counter shared
 * by every process of the host: instants from different demo workers compare exactly. (Each
 * process's `performance.timeOrigin` is fixed on its own at start-up, and a process preempted
 * between the two reads that fix it runs its whole timeline off by that delay: the tiny overlaps
 * the demo once reported under load came from such an offset, not from a double holder.)
 */
export function wallNow(): number {
  return hostNow();
}

interface LeaseFact {
  /** The worker's letter. */
  w: string;
  resource: string;
  token: number;
  /** Wall time of the event. */
  at: number;
}

/** What a worker process reports to the demo, one JSON object a line on its stdout. */
export type WorkerEvent =
  | { e: 'ready'; w: string; pid: number; at: number }
  /** The acquire reply arrived: the holder believes from `at` until `validUntilWall`. */
  | (LeaseFact & { e: 'acquired'; validUntilWall: number })
  /** A renewal landed: the holder now believes until `validUntilWall`. */
  | (LeaseFact & { e: 'renewed'; validUntilWall: number })
  /** The release is being sent: the holder stopped believing at `at`. */
  | (LeaseFact & { e: 'released'; validUntilWall: number })
  /** The holder noticed the loss at `at` (its belief ended at `validUntilWall` if that is earlier). */
  | (LeaseFact & { e: 'lost'; validUntilWall: number })
  /** The manager is handing the lease to a less loaded worker (a `released` follows). */
  | (LeaseFact & { e: 'handoff'; reason: string })
  /** A fenced write reached the downstream and was accepted or rejected. */
  | (LeaseFact & { e: 'write'; seq: number; accepted: boolean })
  | { e: 'warn'; w: string; at: number; message: string };

export type LeaseEvent = Extract<WorkerEvent, { resource: string }>;

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
