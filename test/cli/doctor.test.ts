import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/index.js';
import { tempDir } from '../harness/processes.js';
import { MAIN, runCli } from './run-cli.js';

// `leasehold doctor` on SQLite files: the report, --json, --ignore, and the exit codes a script
// reads (0 nothing found, 3 an unsafe finding, 4 other findings only, 2 usage, 1 unreadable).

const dir = tempDir('leasehold-doctor-cli-');
const shm = mkdtempSync('/dev/shm/leasehold-doctor-cli-');

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npx tsc -p tsconfig.build.json`);
  // The files exist before the command opens them, made with the settings under test.
  for (const [path, synchronous] of [
    [join(dir.path, 'clean.db'), 'full'],
    [join(shm, 'tmp.db'), 'full'],
  ] as const)
    await (await SqliteStore.open(path, { synchronous })).close();
});
afterAll(() => {
  dir.cleanup();
  rmSync(shm, { recursive: true, force: true });
});

describe('leasehold doctor', () => {
  it('exits 0 and says so when nothing is found', async () => {
    const { code, stdout } = await runCli([
      'doctor',
      '--store',
      `sqlite:${join(dir.path, 'clean.db')}`,
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain('nothing found that can lose leases');
    expect(stdout).toContain('checked: PRAGMA synchronous');
  });

  it('exits 3 on an unsafe finding, with what was seen, the risk and the fix', async () => {
    const url = `sqlite:${join(dir.path, 'normal.db')}?synchronous=normal`;
    const { code, stdout, stderr } = await runCli(['doctor', '--store', url]);
    expect(code).toBe(3);
    expect(stdout).toMatch(/^UNSAFE +sqlite\.synchronous$/m);
    expect(stdout).toContain('observed: synchronous = NORMAL');
    expect(stdout).toMatch(/fix: +synchronous: 'full'/);
    expect(stderr).toContain('doctor: 1 finding (1 unsafe)');
  });

  it('exits 4 when the findings cannot break exclusivity', async () => {
    const { code, stdout } = await runCli(['doctor', '--store', `sqlite:${join(shm, 'tmp.db')}`]);
    expect(code).toBe(4);
    expect(stdout).toMatch(/^WARNING +sqlite\.tmpfs$/m);
  });

  it('prints the findings as JSON with --json, and --ignore leaves a known one out', async () => {
    const url = `sqlite:${join(dir.path, 'normal2.db')}?synchronous=normal`;
    const json = await runCli(['doctor', '--store', url, '--json']);
    expect(json.code).toBe(3);
    const parsed = JSON.parse(json.stdout) as {
      store: string;
      exitCode: number;
      findings: { id: string; level: string; observed: string; risk: string; fix: string }[];
      checked: string[];
    };
    expect(parsed.exitCode).toBe(3);
    expect(parsed.findings.map((f) => [f.id, f.level])).toEqual([['sqlite.synchronous', 'unsafe']]);
    expect(parsed.findings[0]!.risk.length).toBeGreaterThan(20);
    const ignored = await runCli(['doctor', '--store', url, '--ignore', 'sqlite.synchronous']);
    expect(ignored.code).toBe(0);
    expect(ignored.stdout).toContain('nothing found');
  });

  it('refuses a misspelt --ignore as a usage error (exit 2) before opening the store', async () => {
    const missing = join(dir.path, 'never-made.db');
    const { code, stderr } = await runCli([
      'doctor',
      '--store',
      `sqlite:${missing}`,
      '--ignore',
      'sqlite.synchronus',
    ]);
    expect(code).toBe(2);
    expect(stderr).toContain('sqlite.synchronus');
    expect(stderr).toContain('sqlite.synchronous'); // the known ids are listed
    expect(existsSync(missing)).toBe(false);
  });

  it('exits 1 with a clear error, never the password, when the store cannot be reached', async () => {
    const { code, stderr } = await runCli(
      ['doctor', '--store', 'redis://app:s3cret-pw@127.0.0.1:1?connectTimeoutMs=500'],
      { timeout: 15_000 },
    );
    expect(code).toBe(1);
    expect(stderr).toMatch(/STORE_UNAVAILABLE/);
    expect(stderr).not.toContain('s3cret-pw');
  });
});
