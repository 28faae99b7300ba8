import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { tempDir } from '../harness/processes.js';

// The examples are what users copy: they must keep running against the built package.
const run = promisify(execFile);
const dir = tempDir('leasehold-examples-');
afterAll(() => dir.cleanup());
const example = (name: string): string =>
  fileURLToPath(new URL(`../../examples/${name}.mjs`, import.meta.url));
const env = { ...process.env, EXAMPLE_SECONDS: '3', EXAMPLE_RUNS: '2' };

it('singleton-job: of two replicas started together, one runs each tick and the other skips', async () => {
  const store = `sqlite:${dir.path}/singleton.db`;
  const [a, b] = await Promise.all([
    run(process.execPath, [example('singleton-job'), store], { env }),
    run(process.execPath, [example('singleton-job'), store], { env }),
  ]);
  const out = a.stdout + b.stdout;
  expect(out).toMatch(/report step 3, fencing token \d/);
  expect(out).toContain('another replica is running the report; skipping');
}, 30_000);

it('shard-consumers: two workers split 8 shards and hand over on stop', async () => {
  const store = `sqlite:${dir.path}/shards.db`;
  const [a, b] = await Promise.all([
    run(process.execPath, [example('shard-consumers'), store], { env }),
    run(process.execPath, [example('shard-consumers'), store], { env }),
  ]);
  const consumed = (a.stdout + b.stdout).match(/consuming orders\/shard-\d/g) ?? [];
  expect(new Set(consumed).size).toBe(8);
  expect(a.stdout + b.stdout).toContain('LEASE_RELEASED');
}, 30_000);

it('leader-election: of two candidates one is elected, and leadership ends with stop', async () => {
  const store = `sqlite:${dir.path}/election.db`;
  const [a, b] = await Promise.all([
    run(process.execPath, [example('leader-election'), store], { env }),
    run(process.execPath, [example('leader-election'), store], { env }),
  ]);
  const elected =
    (a.stdout.match(/elected with token/g) ?? []).length +
    (b.stdout.match(/elected with token/g) ?? []).length;
  expect(elected).toBeGreaterThanOrEqual(1);
  expect(a.stdout + b.stdout).toMatch(/no longer leader: stopped/);
}, 30_000);

it('queue-with-leases: duplicate hints to three consumers still do each job once', async () => {
  const { stdout } = await run(
    process.execPath,
    [example('queue-with-leases'), `sqlite:${dir.path}/queue.db`],
    { env },
  );
  expect(stdout).toContain('5 jobs done, each exactly once');
  expect(stdout.match(/did job-\d/g)).toHaveLength(5);
}, 30_000);

it('shard-checkpoints: through a SIGKILL, a join and graceful stops, every record of every shard is checkpointed exactly once', async () => {
  const { spawn } = await import('node:child_process');
  const store = `sqlite:${dir.path}/checkpoints.db`;
  const start = (seconds: number) => {
    const child = spawn(process.execPath, [example('shard-checkpoints'), store], {
      env: { ...process.env, EXAMPLE_SECONDS: String(seconds) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const done = new Promise<void>((resolve) => child.once('close', () => resolve()));
    return { child, done, out: () => out };
  };
  const a = start(30);
  const b = start(7);
  // Once it has checkpointed, a crash: its shards are taken at expiry, from its last checkpoint.
  for (const end = Date.now() + 20_000; !/^checkpoint /m.test(a.out());) {
    if (Date.now() > end) throw new Error(`no checkpoint from the first worker: ${a.out()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  a.child.kill('SIGKILL');
  const c = start(4); // a join
  await Promise.all([b.done, c.done, a.done]);
  const out = a.out() + b.out() + c.out();
  const byShard = new Map<string, { from: number; to: number; token: number }[]>();
  for (const m of out.matchAll(/^checkpoint (\S+) (\d+)-(\d+) token (\d+)$/gm)) {
    const list = byShard.get(m[1]!) ?? [];
    list.push({ from: Number(m[2]), to: Number(m[3]), token: Number(m[4]) });
    byShard.set(m[1]!, list);
  }
  expect(byShard.size).toBe(4);
  for (const [shard, list] of byShard) {
    list.sort((x, y) => x.from - y.from);
    // The checkpoints tile 1 … n: no record skipped, none checkpointed twice.
    expect(list[0]!.from, shard).toBe(1);
    for (let i = 1; i < list.length; i++) expect(list[i]!.from, shard).toBe(list[i - 1]!.to + 1);
    // Tokens never go down along the sequence: a later checkpoint is never an older owner's.
    for (let i = 1; i < list.length; i++)
      expect(list[i]!.token, shard).toBeGreaterThanOrEqual(list[i - 1]!.token);
  }
  // Ownership really moved: some shard was checkpointed under more than one token.
  expect([...byShard.values()].some((l) => new Set(l.map((x) => x.token)).size > 1)).toBe(true);
  expect(out).toMatch(/resumes after [1-9]\d*/);
}, 60_000);
