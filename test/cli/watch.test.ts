import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqliteStore } from '../../src/index.js';
import { tempDir, waitFor } from '../harness/processes.js';
import { MAIN } from './run-cli.js';

// `leasehold watch` piped (plain lines, no colour, no cursor moves) and with --json, on a SQLite
// file another connection changes.

const dir = tempDir('leasehold-watch-');
const file = join(dir.path, 'watch.db');
let store: SqliteStore;

beforeAll(async () => {
  store = await SqliteStore.open(file);
  await store.tryAcquire('jobs/a', 'x', 60_000);
  await store.tryAcquire('other/z', 'x', 60_000);
});

afterAll(async () => {
  await store.close();
  dir.cleanup();
});

/** Starts `leasehold watch …args` with stdout piped and no colour forced. */
function watch(args: string[]) {
  const env = { ...process.env };
  delete env.LEASEHOLD_STORE;
  delete env.FORCE_COLOR;
  delete env.NO_COLOR;
  const child = spawn(process.execPath, [MAIN, 'watch', '--store', `sqlite:${file}`, ...args], {
    env,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) =>
    child.once('close', (code) => resolve(code)),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

it('piped: one plain line per change, names escaped, no colour', async () => {
  const run = watch(['--prefix', 'jobs/', '--poll', '200ms']);
  try {
    await waitFor('the records present at the start', () =>
      /\sseen\s+jobs\/a\s+owner=x token=1$/m.test(run.stdout()),
    );
    const lease = (await store.tryAcquire('jobs/b', 'y', 60_000))!;
    await waitFor('the acquire', () =>
      /\sacquired\s+jobs\/b\s+owner=y token=1$/m.test(run.stdout()),
    );
    await store.release(lease);
    await waitFor('the release', () =>
      /\sreleased\s+jobs\/b\s+owner=y token=1$/m.test(run.stdout()),
    );
    await store.tryAcquire('jobs/\u001b[2J\nfake line', 'y', 60_000);
    await waitFor('the hostile name', () =>
      run.stdout().includes('jobs/\\x1b[2J\\nfake line  owner=y'),
    );
  } finally {
    run.child.kill('SIGTERM');
  }
  expect(await run.exit).toBe(0);
  const lines = run.stdout().trimEnd().split('\n');
  for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z {2}\w+ +jobs\/\S/);
  expect(run.stdout()).not.toContain('\u001b');
  expect(run.stdout()).not.toContain('other/z');
  expect(run.stderr()).toBe('');
});

it('--json: one JSON object per change, for a change made while it watches', async () => {
  const run = watch(['--prefix', 'jobs/', '--poll', '200ms', '--json']);
  let expiresAt = 0;
  try {
    await waitFor('the first listing', () => run.stdout().includes('"type":"seen"'));
    const lease = (await store.tryAcquire('jobs/c', 'z', 60_000))!;
    expiresAt = lease.expiresAt;
    await waitFor('the acquire', () => run.stdout().includes('"resource":"jobs/c"'));
    await store.release(lease);
    await waitFor('the release', () => run.stdout().includes('"type":"released","at"'));
  } finally {
    run.child.kill('SIGTERM');
  }
  expect(await run.exit).toBe(0);
  const events = run
    .stdout()
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(events.filter((e) => e.type === 'seen').map((e) => e.resource)).toContain('jobs/a');
  const mine = events.filter((e) => e.resource === 'jobs/c');
  expect(mine.map((e) => [e.type, e.owner, e.token])).toEqual([
    ['acquired', 'z', 1],
    ['released', 'z', 1],
  ]);
  expect(mine[0]).toMatchObject({ expiresAt });
  expect(typeof mine[0]!.at).toBe('number');
});
