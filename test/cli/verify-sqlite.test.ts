import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { WriteRecord } from '../../src/cli/harness/history-format.js';
import { tempDir } from '../harness/processes.js';
import { faultEvidence, verify } from '../verify/run-verify.js';

const dir = tempDir('leasehold-verify-sqlite-');
afterAll(() => dir.cleanup());

describe('leasehold verify on SQLite', () => {
  it('stays safe through kill, stop, pause, stall and skew within the bound, and the faults happened', async () => {
    const run = await verify(`sqlite:${join(dir.path, 'leases.db')}`, join(dir.path, 'safe'), [
      '--duration',
      '10s',
      '--ttl',
      '1s',
      '--workers',
      '4',
      '--resources',
      '12',
      '--seed',
      '11',
    ]);
    expect(run.out.overlaps).toEqual([]);
    expect(run.out.tokenOrder).toEqual([]);
    expect(run.out.staleAccepted).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.out.safe).toBe(true);
    expect(run.out.skewBeyond).toBe(false);
    // Offsets within ±maxClockSkewMs/2: two workers never disagree by more than the store allows.
    const skews = run.records.flatMap((r) =>
      r.type === 'fault' && r.kind === 'skew' ? [r.skewMs!] : [],
    );
    expect(skews.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...skews) - Math.min(...skews)).toBeLessThanOrEqual(50);
    expect(skews.some((s) => s !== 0)).toBe(true);
    const evidence = faultEvidence(run.records);
    expect(evidence.killed).toBeGreaterThanOrEqual(1);
    expect(evidence.pauses + evidence.stalledMs.length).toBeGreaterThanOrEqual(1);
    for (const ms of evidence.stalledMs) expect(ms).toBeGreaterThanOrEqual(1000);
    expect(run.out.takeover.kill.count).toBeGreaterThanOrEqual(1);
    expect(run.out.writes.accepted).toBeGreaterThan(50);
    expect(run.out.handovers).toBeGreaterThan(0);
    // Progress kept as lease data: written all run long, never from a stale token or backwards.
    expect(run.out.data.violations).toEqual([]);
    expect(run.out.data.landed).toBeGreaterThan(50);
    expect(run.html).toContain('verdict: SAFE');
    expect(run.html).toContain('<svg');
  }, 60_000);

  it('--permits 3: five workers contend for three permits of each resource through the faults; never more than three owners at once', async () => {
    const run = await verify(`sqlite:${join(dir.path, 'permits.db')}`, join(dir.path, 'permits'), [
      ...['--duration', '8s', '--ttl', '1s', '--workers', '5', '--resources', '2'],
      ...['--permits', '3', '--faults', 'kill,stop,pause,stall', '--seed', '5'],
    ]);
    expect(run.out.overlaps).toEqual([]);
    expect(run.out.tokenOrder).toEqual([]);
    expect(run.out.tooMany).toEqual([]);
    expect(run.out.staleAccepted).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.out.permits).toBe(3);
    // The permits were really shared: three owners of one resource at once, every permit used.
    expect(run.out.mostOwners).toBe(3);
    const keys = new Set(run.records.flatMap((r) => (r.type === 'belief' ? [r.resource] : [])));
    expect(keys.size).toBe(6);
    expect(run.out.handovers).toBeGreaterThan(5);
    expect(run.out.writes.accepted).toBeGreaterThan(50);
    expect(run.records[0]).toMatchObject({ type: 'run', permits: 3 });
  }, 60_000);

  it('with skew beyond the bound, finds the overlaps and counts the stale writes the fence rejected', async () => {
    // Offsets up to ±2 s against an allowance of 50 ms: a worker whose clock runs ahead takes over
    // records its peers still hold and still believe in.
    const run = await verify(`sqlite:${join(dir.path, 'skewed.db')}`, join(dir.path, 'skewed'), [
      ...['--duration', '10s', '--ttl', '1s', '--workers', '4', '--resources', '12'],
      ...['--faults', 'skew,kill', '--skew', '4s', '--seed', '3'],
    ]);
    expect(run.code).toBe(1);
    expect(run.out.safe).toBe(false);
    expect(run.out.skewBeyond).toBe(true);
    expect(run.out.overlaps.length).toBeGreaterThanOrEqual(1);
    for (const o of run.out.overlaps) expect(o.first.owner).not.toBe(o.second.owner);
    // Lease data is written under the store's compare-and-set on the token: a holder taken over
    // early by a skewed clock is refused, so progress stays right even here.
    expect(run.out.data.violations).toEqual([]);
    // The fence is what keeps the data right: stale writes rejected, none accepted. A write is
    // stale when a higher token of its record had been accepted before it was made; whether any
    // came in this run depends on the timing of the overlaps (under load, fewer writes are made).
    const writes = run.records.filter((r): r is WriteRecord => r.type === 'write');
    const stale = writes.filter((w) =>
      writes.some(
        (x) =>
          x.outcome === 'accepted' && x.resource === w.resource && x.token > w.token && x.at < w.at,
      ),
    );
    for (const w of stale) expect(w.outcome).not.toBe('accepted');
    expect(run.out.writes.rejected).toBeGreaterThanOrEqual(
      stale.filter((w) => w.outcome === 'rejected').length,
    );
    if (stale.length > 0) expect(run.out.writes.rejected).toBeGreaterThanOrEqual(1);
    expect(run.out.staleAccepted).toEqual([]);
    expect(run.html).toContain('class="bad"');
    expect(run.html).toMatch(/The fence rejected \d+ stale writes; 0 stale writes were accepted/);
  }, 60_000);
});
