import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { checkRecords } from '../../src/cli/harness/checker.js';
import {
  parseHistory,
  type BeliefRecord,
  type WriteRecord,
} from '../../src/cli/harness/history-format.js';
import { hotLeaseReport } from '../../src/cli/verify/hot-lease.js';
import type { runVerify as RunVerify } from '../../src/cli/verify/run-verify.js';
import { tempDir } from '../harness/processes.js';

// The compiled verify (tests run after the build): its worker processes run dist's worker.js.
const { runVerify } = (await import(
  join(import.meta.dirname, '../../dist/cli/verify/run-verify.js')
)) as { runVerify: typeof RunVerify };

const dir = tempDir('leasehold-hot-lease-');
afterAll(() => dir.cleanup());

it('verify with a hot lease: cyclers beside the fleet acquire, write under and release it, and the checker reads their holds', async () => {
  const outcome = await runVerify({
    store: `sqlite:${join(dir.path, 'leases.db')}`,
    durationMs: 3000,
    workers: 3,
    resources: 6,
    faults: ['kill'],
    seed: 4,
    ttlMs: 1000,
    ttlIsDefault: false,
    reportDir: join(dir.path, 'report'),
    say: () => undefined,
    hotLease: { cyclers: 2 },
  });
  const hot = outcome.hotLease!;
  expect(outcome.result.safe).toBe(true);
  expect(hot.cyclers).toEqual(['h01', 'h02']);
  expect(hot.cycles).toBeGreaterThan(0);
  expect(hot.cyclesPerSecond).toBeGreaterThan(0);
  // Both contended and both got it: the lease changed hands between them.
  for (const id of hot.cyclers) expect(hot.byCycler[id]).toBeGreaterThan(0);

  // The history the checker reads holds every cycle as a belief and its fenced write.
  const records = parseHistory(readFileSync(outcome.history, 'utf8'));
  const beliefs = records.filter(
    (r): r is BeliefRecord => r.type === 'belief' && r.resource === hot.resource,
  );
  const writes = records.filter(
    (r): r is WriteRecord => r.type === 'write' && r.resource === hot.resource,
  );
  expect(beliefs).toHaveLength(hot.grants);
  expect(beliefs.filter((b) => b.how === 'released')).toHaveLength(hot.cycles);
  expect(new Set(beliefs.map((b) => b.owner))).toEqual(new Set(hot.cyclers));
  expect(writes.filter((w) => w.outcome === 'accepted').length).toBe(hot.writes.accepted);
  expect(hot.writes.accepted).toBeGreaterThan(0);
  expect(checkRecords(records)).toEqual(outcome.result);
  // The nemesis aims at the fleet only.
  const hit = records.flatMap((r) => (r.type === 'fault' && r.worker ? [r.worker] : []));
  expect(hit.length).toBeGreaterThan(0);
  for (const id of hot.cyclers) expect(hit).not.toContain(id);

  // Were two cyclers to hold it at once, or a stale token's write be accepted, the same check
  // would say so: move one of h02's holds into one of h01's, and let a lower token write last.
  const a = beliefs.find((x) => x.owner === 'h01')!;
  const b = beliefs.find((x) => x.owner === 'h02')!;
  const accepted = writes.filter((w) => w.outcome === 'accepted').sort((x, y) => x.token - y.token);
  expect(accepted.at(-1)!.token).toBeGreaterThan(accepted[0]!.token);
  const lastCommit = Math.max(...accepted.map((w) => w.commit ?? 0));
  const forged = [
    ...records.map((r) => (r === b ? { ...b, from: a.from, to: a.to + 1 } : r)),
    { ...accepted[0]!, at: accepted[0]!.at + 60_000, commit: lastCommit + 1 },
  ];
  const forgedResult = checkRecords(forged);
  expect(forgedResult.safe).toBe(false);
  const forgedHot = hotLeaseReport(forged, forgedResult, hot.resource, hot.cyclers);
  expect(forgedHot.violations.overlaps).toBeGreaterThan(0);
  expect(forgedHot.violations.staleAccepted).toBe(1);
}, 30_000);
