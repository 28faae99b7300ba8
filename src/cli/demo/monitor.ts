import type { Fleet } from '../harness/fleet.js';
import { HistoryRecorder } from '../harness/recorder.js';
import type { LeaseEvent, WorkerEvent } from '../harness/worker-protocol.js';
import { Ownership } from './ownership.js';

interface Acquisition {
  w: string;
  token: number;
  at: number;
}

/** Totals over a stretch of the run. */
export interface Tally {
  writesAccepted: number;
  writesRejected: number;
  handoffs: number;
  /** Releases sent (graceful: on handoff or shutdown). */
  releases: number;
  /** Rejected writes per worker. */
  rejectedBy: Map<string, number>;
}

/** Everything the workers report, kept as the live view, the history and the log the report reads. */
export class Monitor {
  /** The history the safety check reads. */
  readonly history = new HistoryRecorder();
  readonly ownership: Ownership;
  readonly warnings: string[] = [];
  /** Every lease event but renewals, in arrival order. */
  readonly log: LeaseEvent[] = [];
  readonly totals: Tally = emptyTally();
  private readonly acquisitions = new Map<string, Acquisition[]>();
  /** The highest token of an accepted write, per resource. */
  private readonly written = new Map<string, number>();

  constructor(
    private readonly fleet: Fleet,
    resources: readonly string[],
  ) {
    this.ownership = new Ownership(resources);
    fleet.on('event', (event) => this.record(event));
  }

  /** Letters of workers that run and have joined (not paused, stopping or dead). */
  live(): string[] {
    return this.fleet.running().map((w) => w.id);
  }

  /** When another worker first acquired each of `orphans` (resource → the victim's token) after `since`; null until all were. */
  recoveredAt(orphans: ReadonlyMap<string, number>, victim: string, since: number): number | null {
    let last = since;
    for (const [resource, token] of orphans) {
      const taken = this.acquisitions
        .get(resource)
        ?.find((a) => a.w !== victim && a.token > token && a.at >= since);
      if (!taken) return null;
      last = Math.max(last, taken.at);
    }
    return last;
  }

  /** Whether every one of `orphans` got an accepted write under a newer token than the victim's. */
  rewritten(orphans: ReadonlyMap<string, number>): boolean {
    return [...orphans].every(([resource, token]) => (this.written.get(resource) ?? 0) > token);
  }

  /** Totals of the events with `from <= at < to`. */
  tally(from: number, to: number): Tally {
    const tally = emptyTally();
    for (const event of this.log) if (event.at >= from && event.at < to) count(tally, event);
    return tally;
  }

  private record(event: WorkerEvent): void {
    this.history.record(event);
    if (event.e === 'warn') {
      this.warnings.push(`worker ${event.w}: ${event.message}`);
      return;
    }
    if (!('resource' in event) || event.e === 'renewed' || event.e === 'data') return;
    this.ownership.apply(event);
    this.log.push(event);
    count(this.totals, event);
    if (event.e === 'acquired') {
      const list = this.acquisitions.get(event.resource) ?? [];
      list.push({ w: event.w, token: event.token, at: event.at });
      this.acquisitions.set(event.resource, list);
    } else if (event.e === 'write' && event.outcome === 'accepted') {
      this.written.set(
        event.resource,
        Math.max(this.written.get(event.resource) ?? 0, event.token),
      );
    }
  }
}

function emptyTally(): Tally {
  return { writesAccepted: 0, writesRejected: 0, handoffs: 0, releases: 0, rejectedBy: new Map() };
}

function count(tally: Tally, event: LeaseEvent): void {
  if (event.e === 'write') {
    if (event.outcome === 'accepted') tally.writesAccepted++;
    else if (event.outcome === 'rejected') {
      tally.writesRejected++;
      tally.rejectedBy.set(event.w, (tally.rejectedBy.get(event.w) ?? 0) + 1);
    }
  } else if (event.e === 'handoff') tally.handoffs++;
  else if (event.e === 'released') tally.releases++;
}
