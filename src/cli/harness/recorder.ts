import { Beliefs } from './beliefs.js';
import type { HistoryRecord } from './history-format.js';
import type { WorkerEvent } from './worker-protocol.js';

/** The most worker warnings kept. */
const WARNINGS_KEPT = 20;

/**
 * Turns what the workers report into history records: workers joining, fenced writes, progress
 * written as lease data, and (through {@link Beliefs}) every holder's belief; the command adds its
 * own records (faults, exits) to `records`, and {@link HistoryRecorder.history} closes the lot.
 */
export class HistoryRecorder {
  readonly records: HistoryRecord[] = [];
  readonly beliefs = new Beliefs();
  /** The first worker warnings, as `worker: message`. */
  readonly warnings: string[] = [];

  record(event: WorkerEvent): void {
    switch (event.e) {
      case 'ready':
        this.records.push({
          type: 'worker',
          worker: event.w,
          event: 'ready',
          at: event.at,
          pid: event.pid,
        });
        return;
      case 'write':
        this.records.push({
          type: 'write',
          resource: event.resource,
          owner: event.w,
          token: event.token,
          at: event.at,
          outcome: event.outcome,
          ...(event.commit === undefined ? {} : { commit: event.commit }),
        });
        return;
      case 'data':
        this.records.push({
          type: 'data',
          resource: event.resource,
          owner: event.w,
          token: event.token,
          n: event.n,
          at: event.at,
          outcome: event.outcome,
        });
        return;
      case 'stalled':
      case 'process':
        return;
      case 'warn':
        if (this.warnings.length < WARNINGS_KEPT)
          this.warnings.push(`${event.w}: ${event.message}`);
        return;
      default:
        this.beliefs.record(event);
    }
  }

  /** The records so far, with a belief record for every lease held. */
  history(): HistoryRecord[] {
    return [...this.records, ...this.beliefs.records()];
  }
}
