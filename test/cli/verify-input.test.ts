import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { historyLine, type HistoryRecord } from '../../src/cli/harness/history-format.js';
import { tempDir } from '../harness/processes.js';
import { runCli } from './run-cli.js';

const dir = tempDir('leasehold-verify-input-');
afterAll(() => dir.cleanup());

function historyFile(name: string, records: HistoryRecord[]): string {
  const path = join(dir.path, name);
  writeFileSync(path, records.map(historyLine).join(''));
  return path;
}

const run: HistoryRecord = {
  type: 'run',
  version: 1,
  clock: 'CLOCK_MONOTONIC',
  clockErrorMs: 0.001,
  store: 'sqlite:x.db',
  storeClock: 'local',
  maxClockSkewMs: 50,
  ttlMs: 1000,
  reconcileMs: 500,
  livenessBoundMs: 2650,
  workers: 2,
  resources: 1,
  faults: [],
  seed: 1,
  skewMs: 0,
  startedAt: 0,
};

describe('leasehold check HISTORY', () => {
  it('exits 0 on a clean history and 1 naming the resource, owners, tokens and times of an overlap', async () => {
    const belief = (owner: string, token: number, from: number, to: number): HistoryRecord => ({
      type: 'belief',
      resource: 'jobs/7',
      owner,
      token,
      from,
      to,
      how: 'released',
    });
    const ok = await runCli([
      'check',
      historyFile('ok.jsonl', [run, belief('A', 1, 0, 100), belief('B', 2, 101, 200)]),
    ]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^verdict: SAFE \(2 beliefs, 1 handovers/m);

    const bad = await runCli([
      'check',
      historyFile('bad.jsonl', [run, belief('A', 1, 0, 100.5), belief('B', 2, 100, 200)]),
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(
      'jobs/7: B (token 2) from 0.100000s while A (token 1) believed until 0.100500s: both for 0.500 ms',
    );
    expect(bad.stdout).toMatch(/^verdict: UNSAFE: 1 violations/m);

    const json = await runCli(['check', '--json', join(dir.path, 'bad.jsonl')]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      safe: false,
      overlaps: [{ resource: 'jobs/7' }],
    });
  });

  it('exits 2 on a file it cannot read or parse', async () => {
    const missing = await runCli(['check', join(dir.path, 'nope.jsonl')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read .*nope\.jsonl/);
    const path = join(dir.path, 'garbage.jsonl');
    writeFileSync(path, `${historyLine(run)}{"type":"belief","resource":"r"}\n`);
    const garbage = await runCli(['check', path]);
    expect(garbage.code).toBe(2);
    expect(garbage.stderr).toMatch(/line 2 \(belief\) needs a string "owner"/);
  });
});

describe('leasehold verify: input it cannot run with', () => {
  const store = `sqlite:${join(dir.path, 'leases.db')}`;

  it('refuses an unknown fault name, a bad duration and a scheme without a URL, exit 2', async () => {
    const fault = await runCli(['verify', '--store', store, '--faults', 'kill,explode']);
    expect(fault.code).toBe(2);
    expect(fault.stderr).toMatch(/unknown fault "explode"; known: kill, stop, pause, stall, skew/);
    const duration = await runCli(['verify', '--store', store, '--duration', '10']);
    expect(duration.code).toBe(2);
    expect(duration.stderr).toMatch(/"10" has no unit/);
    const scheme = await runCli(['verify', '--store', 'foo']);
    expect(scheme.code).toBe(2);
    expect(scheme.stderr).toMatch(/verify starts a private server only for redis, postgres, etcd/);
    const memory = await runCli(['verify', '--store', 'memory:']);
    expect(memory.code).toBe(2);
    expect(memory.stderr).toMatch(/lives inside one process/);
    for (const bad of ['0', '65', '2.5', 'three']) {
      const permits = await runCli(['verify', '--store', store, '--permits', bad]);
      expect(permits.code, bad).toBe(2);
      expect(permits.stderr).toMatch(/option '--permits <n>' argument .* is invalid/);
    }
  });

  it('refuses a lab setup it does not know, and options a lab run does not take, exit 2', async () => {
    const unknown = await runCli(['verify', '--store', 'lab:mongodb']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(
      /--store lab:mongodb: known setups: etcd, zookeeper, nats, redis, redis-sentinel, postgres-async, postgres-sync/,
    );
    const permits = await runCli(['verify', '--store', 'lab:etcd', '--permits', '2']);
    expect(permits.code).toBe(2);
    expect(permits.stderr).toMatch(/--permits, --skew and --drift do not apply to a lab run/);
  });

  it('says it could not run on an unreachable store, exit 2, without printing the password', async () => {
    const result = await runCli([
      'verify',
      '--store',
      'postgres://lease:hunter2-secret@127.0.0.1:1/db',
      '--duration',
      '5s',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^leasehold: could not run: postgres:\/\/lease:\*\*\*@127\.0\.0\.1:1\/db: /,
    );
    expect(result.stdout + result.stderr).not.toContain('hunter2');
  });
});
