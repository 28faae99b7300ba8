import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../harness/processes.js';
import { MAIN, runCli, type CliResult } from './run-cli.js';

const cli = (...args: string[]): Promise<CliResult> => runCli(args, { cwd: dir.path });

let dir: ReturnType<typeof tempDir>;
let store: string;

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npx tsc -p tsconfig.build.json`);
  dir = tempDir('leasehold-cli-');
  store = `sqlite:${join(dir.path, 'x.db')}`;
});

afterAll(() => dir.cleanup());

describe('leasehold CLI', () => {
  it('acquires, shows, refuses a second owner, and releases only with the right token', async () => {
    const acquired = await cli(
      'acquire',
      'job',
      '--owner',
      'alice',
      '--ttl',
      '20s',
      '--store',
      store,
    );
    expect(acquired).toMatchObject({ code: 0, stderr: '' });
    expect(acquired.stdout).toMatch(/token:\s+1/);
    expect(acquired.stdout).toContain('leasehold release job --owner alice --token 1');

    const got = await cli('get', 'job', '--store', store, '--json');
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({
      resource: 'job',
      owner: 'alice',
      token: 1,
      state: 'held',
      clock: 'local',
    });

    const listed = await cli('list', '--store', store, '--json');
    expect(listed.code).toBe(0);
    const { leases } = JSON.parse(listed.stdout) as { leases: Record<string, unknown>[] };
    expect(leases).toHaveLength(1);
    const [lease] = leases;
    expect(lease).toMatchObject({ resource: 'job', owner: 'alice', token: 1, state: 'held' });
    expect(lease!.expiresInMs).toBeGreaterThan(0);
    expect(lease!.expiresInMs).toBeLessThanOrEqual(20_000);

    const refused = await cli('acquire', 'job', '--owner', 'bob', '--ttl', '20s', '--store', store);
    expect(refused.code).toBe(75); // held by another owner, unlike a failure (1)
    expect(refused.stderr).toMatch(/^leasehold: LEASE_UNAVAILABLE: .*"alice" with token 1/);
    expect(refused.stdout).toBe('');

    const wrong = await cli('release', 'job', '--owner', 'alice', '--token', '2', '--store', store);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr.trim()).toBe(
      'leasehold: not released: lease on "job" is not held by "alice" with token 2',
    );

    const right = await cli('release', 'job', '--owner', 'alice', '--token', '1', '--store', store);
    expect(right).toMatchObject({ code: 0, stderr: '' });
    expect(right.stdout).toContain('released "job"');

    const table = await cli('list', '--store', store);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^RESOURCE\s+OWNER\s+TOKEN\s+STATE\s+EXPIRES\n/);
    expect(table.stdout).toMatch(/job\s+-\s+1\s+released\s+-/);
  });

  it('says when there is no record, with exit 1', async () => {
    const missing = await cli('get', 'nothing-here', '--store', store);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe('leasehold: no lease record for "nothing-here"');
  });

  it('rejects a duration without a unit as a usage error', async () => {
    const result = await cli('acquire', 'job', '--owner', 'a', '--ttl', '20', '--store', store);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("option '--ttl <duration>' argument '20' is invalid");
    expect(result.stderr).toContain('has no unit; add one, e.g. 20s');
  });

  it('names the known schemes when a store URL has an unknown one', async () => {
    const result = await cli('list', '--store', 'nosuch://somewhere');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^leasehold: STORE_URL_INVALID: unknown store scheme "nosuch:"/);
    for (const scheme of ['sqlite:', 'postgres:', 'redis:'])
      expect(result.stderr).toContain(scheme);
  });

  it('never prints the password of a store URL', async () => {
    const url = 'postgres://u:secret@127.0.0.1:1/db';
    for (const args of [
      ['list', '--store', url],
      ['get', 'job', '--store', url, '--json'],
      ['acquire', 'job', '--owner', 'a', '--ttl', '1s', '--store', url],
    ]) {
      const result = await cli(...args);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^leasehold: [A-Z_]+: /);
      expect(result.stdout + result.stderr).not.toContain('secret');
    }
  });

  it('prints its version and lists commands and store schemes in --help', async () => {
    const { version } = JSON.parse(
      readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8'),
    ) as { version: string };
    expect((await cli('--version')).stdout.trim()).toBe(version);
    const help = await cli('--help');
    expect(help.code).toBe(0);
    for (const word of [
      'list',
      'get',
      'acquire',
      'release',
      'demo',
      'tour',
      'sqlite:',
      'postgres:',
    ])
      expect(help.stdout).toContain(word);
  });
});

describe('stores that live inside one process', () => {
  it('run and acquire refuse memory: and sqlite::memory:, where each invocation has its own store', async () => {
    for (const url of ['memory:', 'sqlite::memory:']) {
      const run = await cli('run', 'job', '--store', url, '--', 'true');
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/lives inside one process/);
      const acquired = await cli('acquire', 'job', '--owner', 'a', '--store', url);
      expect(acquired.code, acquired.stderr).toBe(2);
      expect(acquired.stderr).toMatch(/lives inside one process; a lease taken here would vanish/);
    }
  });
});

describe('the implicit store', () => {
  it('LEASEHOLD_REQUIRE_STORE makes a command without --store or LEASEHOLD_STORE fail, creating nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-require-'));
    try {
      const r = await runCli(['list'], { cwd: dir, env: { LEASEHOLD_REQUIRE_STORE: '1' } });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /LEASEHOLD_REQUIRE_STORE rules out the default sqlite:\.\/leasehold\.db/,
      );
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('without it, a command on the implicit store warns once on stderr naming the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-implicit-'));
    try {
      const r = await runCli(['list'], { cwd: dir, env: { LEASEHOLD_REQUIRE_STORE: undefined } });
      expect(r.code).toBe(0);
      expect(r.stderr.match(/LEASEHOLD_DEFAULT_STORE/g)).toHaveLength(1);
      expect(r.stderr).toContain(join(realpathSync(dir), 'leasehold.db'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
