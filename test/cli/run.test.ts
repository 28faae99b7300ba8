import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../harness/processes.js';

import { MAIN } from './run-cli.js';

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** The exit code, or 128+N when a signal ended it. */
  exit: Promise<number>;
}

let dir: ReturnType<typeof tempDir>;
let n = 0;

/** Starts `leasehold ...args` from the compiled CLI in a temp folder, collecting what it prints. */
function leasehold(...args: string[]): Run {
  const env = { ...process.env };
  delete env.LEASEHOLD_STORE;
  const child = spawn(process.execPath, [MAIN, ...args], { cwd: dir.path, env });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number>((resolve) =>
    child.once('close', (code, signal) => resolve(code ?? (signal ? -1 : -2))),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

/** A fresh SQLite store file and a way to read its records directly. */
function freshStore(): { url: string; record: (resource: string) => Record<string, unknown> } {
  const path = join(dir.path, `run-${++n}.db`);
  return {
    url: `sqlite:${path}`,
    record: (resource) => {
      const db = new Database(path, { readonly: true });
      try {
        return db
          .prepare(
            'SELECT owner, token, expires_at AS expiresAt FROM leasehold_leases WHERE resource = ?',
          )
          .get(resource) as Record<string, unknown>;
      } finally {
        db.close();
      }
    },
  };
}

/** `node -e SCRIPT` as the command leasehold runs. */
const node = (script: string): string[] => ['--', process.execPath, '-e', script];

/** Whether `pid` runs; a zombie (exited, not yet reaped) counts as gone. */
const isAlive = (pid: number): boolean => {
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npx tsc -p tsconfig.build.json`);
  dir = tempDir('leasehold-run-');
});
afterAll(() => dir?.cleanup());

describe('leasehold run', () => {
  it('gives the command its token, resource and owner, passes its exit code through, and releases', async () => {
    const store = freshStore();
    const run = leasehold(
      'run',
      'nightly',
      '--store',
      store.url,
      '--owner',
      'host-a',
      ...node(
        'const e = process.env; console.log([e.LEASEHOLD_TOKEN, e.LEASEHOLD_RESOURCE, e.LEASEHOLD_OWNER].join(" ")); process.exit(3)',
      ),
    );
    expect(await run.exit).toBe(3);
    expect(run.stdout()).toBe('1 nightly host-a\n');
    expect(run.stderr()).toBe('');
    expect(store.record('nightly')).toEqual({ owner: '', token: 1, expiresAt: 0 });

    // The next run gets the next token.
    const again = leasehold(
      'run',
      'nightly',
      '--store',
      store.url,
      ...node('console.log(process.env.LEASEHOLD_TOKEN)'),
    );
    expect(await again.exit).toBe(0);
    expect(again.stdout()).toBe('2\n');
  });

  it('--permits N runs at most N commands at once, each with its own LEASEHOLD_PERMIT', async () => {
    const store = freshStore();
    const script =
      'console.log("permit " + process.env.LEASEHOLD_PERMIT + " token " + process.env.LEASEHOLD_TOKEN); setTimeout(() => {}, 1500)';
    const runs = Array.from({ length: 3 }, () =>
      leasehold(
        'run',
        'api',
        '--store',
        store.url,
        '--permits',
        '2',
        '--wait',
        '0',
        ...node(script),
      ),
    );
    const codes = await Promise.all(runs.map((r) => r.exit));
    expect(codes.sort()).toEqual([0, 0, 75]);
    const lines = runs
      .map((r) => r.stdout().trim())
      .filter(Boolean)
      .sort();
    expect(lines).toEqual(['permit 0 token 1', 'permit 1 token 1']);
    const refused = runs.find((r) => r.stdout() === '')!;
    expect(refused.stderr()).toContain('all 2 permits');
    const bad = leasehold('run', 'api', '--store', store.url, '--permits', '0', ...node('1'));
    expect(await bad.exit).toBe(2);
    expect(bad.stderr()).toContain('--permits');
  });

  it('passes the previous lease data in LEASEHOLD_DATA and LEASEHOLD_DATA_FILE, and writes back what the command left, with the release', async () => {
    const store = freshStore();
    // A cron job that resumes: reads the count the last run left, adds 100, leaves it in the file.
    const script =
      'const fs = require("fs"); const n = Number(process.env.LEASEHOLD_DATA ?? 0); console.log("from " + n); fs.writeFileSync(process.env.LEASEHOLD_DATA_FILE, String(n + 100));';
    for (const expected of ['from 0', 'from 100', 'from 200']) {
      const r = leasehold(
        'run',
        'cron/count',
        '--store',
        store.url,
        '--wait',
        '0',
        ...node(script),
      );
      expect(await r.exit, r.stderr()).toBe(0);
      expect(r.stdout().trim()).toBe(expected);
    }
    const get = leasehold('get', 'cron/count', '--store', store.url, '--json');
    expect(await get.exit).toBe(0);
    expect(JSON.parse(get.stdout())).toMatchObject({ owner: '', token: 3, data: '300' });
    // A file over the limit is not written, with a warning; the last value stays.
    const big = leasehold(
      'run',
      'cron/count',
      '--store',
      store.url,
      ...node('require("fs").writeFileSync(process.env.LEASEHOLD_DATA_FILE, "x".repeat(5000))'),
    );
    expect(await big.exit).toBe(0);
    expect(big.stderr()).toContain('over the limit of 4096');
    const after = leasehold('get', 'cron/count', '--store', store.url, '--json');
    await after.exit;
    expect(JSON.parse(after.stdout())).toMatchObject({ data: '300' });
  });

  it('runs the command in exactly one of two racing runs; the other exits 75; SIGTERM is forwarded and the lease released', async () => {
    const store = freshStore();
    // The command says it ran, then waits for SIGTERM, and exits 7 on it.
    const script =
      'process.on("SIGTERM", () => { console.log("got SIGTERM"); process.exit(7); }); console.log("ran " + process.env.LEASEHOLD_TOKEN); setInterval(() => {}, 1000);';
    const runs = [1, 2].map(() =>
      leasehold('run', 'singleton', '--store', store.url, '--wait', '0', ...node(script)),
    );
    const first = await Promise.race(runs.map((r, i) => r.exit.then((code) => ({ i, code }))));
    const loser = runs[first.i]!;
    const winner = runs[1 - first.i]!;
    expect(first.code).toBe(75);
    expect(loser.stdout()).toBe('');
    expect(loser.stderr()).toMatch(
      /^leasehold: LEASE_UNAVAILABLE: lease on "singleton" is held by ".+" with token 1, expiring .*\n$/,
    );
    await waitFor('the winner to run its command', () => winner.stdout().includes('ran 1\n'));
    expect(store.record('singleton')).toMatchObject({ token: 1 });
    expect(store.record('singleton')!.owner).not.toBe('');

    winner.child.kill('SIGTERM');
    expect(await winner.exit).toBe(7);
    expect(winner.stdout()).toBe('ran 1\ngot SIGTERM\n');
    expect(winner.stderr()).toBe('');
    expect(store.record('singleton')).toEqual({ owner: '', token: 1, expiresAt: 0 });
  });

  it('stops the command when the lease is lost: SIGTERM to its whole group, SIGKILL after the grace', async () => {
    const store = freshStore();
    // The command starts a grandchild in its group, then ignores SIGTERM (so only SIGKILL ends it).
    const script = [
      'const g = require("node:child_process").spawn("sleep", ["1000"], { stdio: "ignore" });',
      'process.on("SIGTERM", () => console.log("got SIGTERM"));',
      'console.log("ready " + g.pid);',
      'setInterval(() => {}, 1000);',
    ].join(' ');
    const run = leasehold(
      'run',
      'stream',
      '--store',
      store.url,
      '--ttl',
      '1s',
      '--grace',
      '300ms',
      ...node(script),
    );
    await waitFor('the command to start', () => /ready \d+\n/.test(run.stdout()));
    const grandchild = Number(/ready (\d+)/.exec(run.stdout())![1]);
    expect(isAlive(grandchild)).toBe(true);

    // Another owner takes the lease over in the store: the next renewal finds it is no longer ours.
    const db = new Database(store.url.slice('sqlite:'.length));
    db.prepare(
      "UPDATE leasehold_leases SET owner = 'thief', token = token + 1, expires_at = ? WHERE resource = 'stream'",
    ).run(Date.now() + 60_000);
    db.close();

    expect(await run.exit).toBe(70);
    expect(run.stdout()).toContain('got SIGTERM\n');
    expect(run.stderr()).toMatch(
      /^leasehold: LEASE_LOST: lease on "stream" \(token 1\) lost: .*; stopping the command: SIGTERM now, SIGKILL in 300ms\n$/,
    );
    expect(isAlive(grandchild)).toBe(false);
    // The thief's lease is untouched: leasehold released nothing that was not its own.
    expect(store.record('stream')).toMatchObject({ owner: 'thief', token: 2 });
  });

  it('answers usage errors with exit 2 and a missing command with 127, releasing the lease', async () => {
    const store = freshStore();
    const usage = [
      ['run', 'job', '--store', store.url],
      ['run', 'job', '--store', store.url, '--'],
      ['run', 'job', 'extra', '--store', store.url, '--', 'true'],
      ['run', 'job', '--store', store.url, '--wait', '5', '--', 'true'],
      ['run', 'job', '--store', store.url, '--bogus', '--', 'true'],
    ].map((args) => ({ args, run: leasehold(...args) }));
    for (const { args, run } of usage) {
      expect(await run.exit, args.join(' ')).toBe(2);
      expect(run.stderr()).toMatch(/^error: /);
    }
    expect(existsSync(store.url.slice('sqlite:'.length))).toBe(false);

    const missing = leasehold('run', 'job', '--store', store.url, '--', 'no-such-command-here');
    expect(await missing.exit).toBe(127);
    expect(missing.stderr()).toMatch(/^leasehold: cannot run "no-such-command-here": .*ENOENT\n$/);
    expect(store.record('job')).toEqual({ owner: '', token: 1, expiresAt: 0 });

    const bad = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [MAIN, 'run', 'job', '--store', 'nosuch://x', '--', 'true'],
        (e, _o, stderr) => resolve({ code: e ? Number(e.code) : 0, stderr }),
      ),
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^leasehold: STORE_URL_INVALID: /);
  });
});
