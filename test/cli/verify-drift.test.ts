import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { FaultRecord, WriteRecord } from '../../src/cli/harness/history-format.js';
import { tempDir } from '../harness/processes.js';
import { verify } from '../verify/run-verify.js';
import { runCli } from './run-cli.js';

const dir = tempDir('leasehold-verify-drift-');
afterAll(() => dir.cleanup());

/** The drift faults of a history: which workers' clocks ran at which rate. */
function drifting(records: readonly { type: string }[]): Map<string, number> {
  return new Map(
    records
      .filter((r): r is FaultRecord => r.type === 'fault' && (r as FaultRecord).kind === 'drift')
      .map((r) => [r.worker!, r.rate!]),
  );
}

describe('leasehold verify --drift on SQLite', () => {
  it('stays safe with clocks 1 % slow (the default rate, within 1 % of the TTL + 2 ms) among the other faults', async () => {
    const run = await verify(`sqlite:${join(dir.path, 'within.db')}`, join(dir.path, 'within'), [
      ...['--duration', '5s', '--ttl', '1s', '--workers', '4', '--resources', '8'],
      ...['--faults', 'kill,stop,pause,stall,skew,drift', '--seed', '2'],
    ]);
    expect(run.out.overlaps).toEqual([]);
    expect(run.out.staleAccepted).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.out.safe).toBe(true);
    expect(run.out).toMatchObject({ driftBeyond: false, skewBeyond: false });
    expect(run.records[0]).toMatchObject({ type: 'run', driftRate: -0.01, driftStepMs: 25 });
    // The odd-numbered workers drift, the others keep the host's rate; the drifting ones held leases.
    const rates = drifting(run.records);
    expect([...rates.keys()].slice(0, 2)).toEqual(['w01', 'w03']);
    for (const rate of rates.values()) expect(rate).toBe(-0.01);
    const owners = new Set(run.records.flatMap((r) => (r.type === 'belief' ? [r.owner] : [])));
    expect([...rates.keys()].some((w) => owners.has(w))).toBe(true);
    expect(run.out.notes.join('\n')).toMatch(/drift: the odd-numbered workers' clocks .* run -1%/);
    expect(run.html).toContain('clock rates: w01 -1%, w03 -1%');
    expect(run.html).not.toContain('Clock drift went beyond');
  }, 30_000);

  it('with clocks 20 % slow, finds the overlaps of the slow holders and the fence accepts no stale write', async () => {
    // TTL 1 s: a holder 20 % slow believes 938 ms / 0.8 ≈ 1172 ms after its last renewal left,
    // while its peers take the record over about 1050 ms after it (TTL + the 50 ms skew allowance).
    const run = await verify(`sqlite:${join(dir.path, 'beyond.db')}`, join(dir.path, 'beyond'), [
      ...['--duration', '5s', '--ttl', '1s', '--workers', '3', '--resources', '6'],
      ...['--faults', 'kill,pause,stall', '--drift', '-20%', '--seed', '2'],
    ]);
    expect(run.code).toBe(1);
    expect(run.out.safe).toBe(false);
    expect(run.out).toMatchObject({ driftBeyond: true, skewBeyond: false });
    expect(run.records[0]).toMatchObject({ type: 'run', driftRate: -0.2 });
    expect((run.records[0] as { faults: string[] }).faults).toContain('drift');
    const rates = drifting(run.records);
    expect(rates.get('w01')).toBe(-0.2);
    expect(rates.has('w02')).toBe(false);
    // Every overlap is a slow holder still believing after a peer took over.
    expect(run.out.overlaps.length).toBeGreaterThanOrEqual(1);
    for (const o of run.out.overlaps) {
      expect(rates.has(o.first.owner), o.first.owner).toBe(true);
      expect(o.first.owner).not.toBe(o.second.owner);
    }
    expect(run.out.tokenOrder).toEqual([]);
    expect(run.out.data.violations).toEqual([]);
    // The fence keeps the data right: no write accepted after a higher token's.
    const writes = run.records.filter((r): r is WriteRecord => r.type === 'write');
    const stale = writes.filter((w) =>
      writes.some(
        (x) =>
          x.outcome === 'accepted' && x.resource === w.resource && x.token > w.token && x.at < w.at,
      ),
    );
    for (const w of stale) expect(w.outcome).not.toBe('accepted');
    expect(run.out.staleAccepted).toEqual([]);
    expect(run.html).toContain('class="bad"');
    expect(run.html).toContain(
      'Clock drift went beyond the allowance of rule 2: clocks -20% (200 ms slow over a TTL of 1000 ms &gt; 12 ms',
    );
    expect(run.html).toMatch(/The fence rejected \d+ stale writes; 0 stale writes were accepted/);
  }, 30_000);

  it('refuses a --drift that is not a percentage from -50% to +50%, exit 2 naming the option', async () => {
    const store = `sqlite:${join(dir.path, 'input.db')}`;
    for (const bad of ['abc', '200%', '-100%']) {
      const result = await runCli(['verify', '--store', store, '--drift', bad]);
      expect(result.code, bad).toBe(2);
      expect(result.stderr, bad).toContain(`option '--drift <rate>' argument '${bad}' is invalid`);
    }
  });
});
