import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DemoReport } from '../../src/cli/demo/report.js';
import { tempDir, waitFor } from '../harness/processes.js';
import { MAIN, runCli, type CliResult } from './run-cli.js';

const cli = (args: string[], timeout = 10_000): Promise<CliResult> => runCli(args, { timeout });

/** Whether a process runs (a zombie waiting to be reaped does not). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npx tsc -p tsconfig.build.json`);
});

describe('leasehold demo', () => {
  it('takes a fleet of worker processes through four faults: safe, every fault recovered, stale writes fenced', async () => {
    // Every process of the demo names its store, so it runs where the default store is ruled
    // out, prints no warning about it, and leaves no ./leasehold.db behind.
    const cwd = tempDir();
    const result = await runCli(['demo', '--quick', '--json'], {
      timeout: 40_000,
      cwd: cwd.path,
      env: { LEASEHOLD_REQUIRE_STORE: '1' },
    });
    expect(result.stderr).toBe('');
    expect(readdirSync(cwd.path)).toEqual([]);
    cwd.cleanup();
    const report = JSON.parse(result.stdout) as DemoReport;
    try {
      expect(result.code).toBe(0);
      expect(report).toMatchObject({
        ok: true,
        safe: true,
        recovered: true,
        workers: 4,
        resources: 32,
      });
      expect(report.safety).toMatchObject({
        overlaps: [],
        tokenOrder: [],
        staleWritesAccepted: [],
      });
      // Leases changed hands many times, and the history and the downstream both saw it.
      expect(report.safety.tenures).toBeGreaterThan(report.resources);
      expect(report.safety.handovers).toBeGreaterThan(0);
      expect(report.safety.writesChecked).toBeGreaterThan(100);

      expect(report.phases.map((p) => p.kind)).toEqual([
        'start',
        'sigkill',
        'sigterm',
        'sigstop',
        'join',
      ]);
      for (const phase of report.phases.slice(1)) {
        expect(phase.recoveryMs, phase.title).toEqual(expect.any(Number));
        expect(Number.isFinite(phase.recoveryMs), phase.title).toBe(true);
        expect(phase.recoveryMs!, phase.title).toBeGreaterThan(0);
      }
      const [, kill, term, pause, join_] = report.phases;
      for (const fault of [kill!, term!, pause!])
        expect(fault.orphans, fault.title).toBeGreaterThan(0);
      // SIGTERM: the victim released every lease it held on its way out.
      expect(term!.releasedOnShutdown).toBe(term!.orphans);
      // The frozen worker woke past its TTL and its writes in flight reached the fence, which said no.
      expect(pause!.pausedMs!).toBeGreaterThanOrEqual(2 * report.ttlMs);
      expect(pause!.victimWritesRejected).toBeGreaterThanOrEqual(1);
      expect(pause!.writesRejected).toBeGreaterThanOrEqual(pause!.victimWritesRejected);
      // The newcomer only gets leases others hand over.
      expect(join_!.handoffs).toBeGreaterThanOrEqual(1);

      // Read the downstream independently: per resource, committed tokens never go down, and the
      // fence's highest token is the last one written.
      const db = new Database(report.downstream, { readonly: true });
      const rows = db.prepare('SELECT resource, token FROM demo_writes ORDER BY id').all() as {
        resource: string;
        token: number;
      }[];
      const fence = db.prepare('SELECT resource, token FROM leasehold_fence').all() as {
        resource: string;
        token: number;
      }[];
      db.close();
      expect(rows.length).toBe(report.safety.writesChecked);
      const last = new Map<string, number>();
      for (const row of rows) {
        expect(row.token).toBeGreaterThanOrEqual(last.get(row.resource) ?? 0);
        last.set(row.resource, row.token);
      }
      expect(new Map(fence.map((f) => [f.resource, f.token]))).toEqual(last);

      // No worker process outlives the demo.
      expect(Object.keys(report.pids)).toEqual(['A', 'B', 'C', 'D', 'E']);
      for (const pid of Object.values(report.pids)) expect(alive(pid)).toBe(false);
    } finally {
      rmSync(report.dir, { recursive: true, force: true });
    }
  }, 45_000);

  it('kills its worker processes when interrupted', async () => {
    const env = { ...process.env };
    delete env.LEASEHOLD_STORE;
    const child = spawn(process.execPath, [MAIN, 'demo', '--quick'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const pids = await new Promise<number[]>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const line = /started workers (.*)\n/.exec(out);
        if (line) resolve([...line[1]!.matchAll(/pid (\d+)/g)].map((m) => Number(m[1])));
      });
      child.once('exit', () => reject(new Error(`the demo exited early:\n${out}`)));
    });
    expect(pids).toHaveLength(4);
    expect(pids.every(alive)).toBe(true);
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => resolve(code)),
    );
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    // SIGKILL takes effect asynchronously; each worker must be gone within moments.
    await waitFor('the workers to be gone', () => !pids.some(alive), 3000);
    const dir = /store: sqlite:(\S+)\/leases\.db/.exec(out)?.[1];
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 20_000);

  it('rejects bad flags as usage errors before starting anything', async () => {
    const cases = [
      [['--workers', '0'], "argument '0' is invalid"],
      [['--ttl', '2'], 'has no unit'],
      [['--resources', 'many'], 'is not a whole number'],
      [['--no-such-flag'], "unknown option '--no-such-flag'"],
      [['--store', 'memory:'], 'need a store they share'],
    ] as const;
    const results = await Promise.all(cases.map(([args]) => cli(['demo', ...args])));
    results.forEach((result, i) => {
      const [args, message] = cases[i]!;
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toContain(message);
      expect(result.stdout).toBe('');
    });
  });
});
