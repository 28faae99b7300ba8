import type { AcquireOutcome } from '../../core/store.js';
import { dataSize, type ReplySizer } from '../../core/reply-sizer.js';
import { BATCH_ROWS, type SqliteRunner } from './sqlite-runner.js';
import type { SqliteTransitions } from './sqlite-transitions.js';

/**
 * `acquireMany` in chunks: one IMMEDIATE transaction per chunk of `BATCH_ROWS` resources, each on
 * one reading of the clock, one step each, so the event loop runs between chunks. A chunk is
 * smaller where records carry much data (decoded in the same step), as `sizer` has seen lately;
 * each chunk's outcomes teach it more.
 */
export function acquireInChunks(
  runner: SqliteRunner,
  records: SqliteTransitions,
  sizer: ReplySizer,
  resources: readonly string[],
  owner: string,
  ttlMs: number,
): Promise<AcquireOutcome[]> {
  return runner.runChunked(
    'acquireMany',
    resources,
    (chunk) => {
      const outcomes = records.acquireBatch.immediate(chunk, owner, ttlMs);
      let bytes = 0;
      for (const o of outcomes) bytes += dataSize(o.lease?.data) + dataSize(o.holder?.data);
      sizer.observe(bytes, outcomes.length);
      return outcomes;
    },
    // Chunks of BATCH_ROWS; fewer where records carry much data (decoded in the same step).
    (left) => sizer.records(Math.min(left, BATCH_ROWS)),
  );
}
