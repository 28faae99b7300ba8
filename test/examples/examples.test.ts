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
