import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { SqliteStore } from '../../src/index.js';
import { tempDir } from '../harness/processes.js';

const script = fileURLToPath(new URL('./keep-alive-worker.mjs', import.meta.url));
const dir = tempDir('leasehold-lifetime-');
afterAll(() => dir.cleanup());
let n = 0;

interface Run {
  readonly output: () => string;
  readonly exited: Promise<number | null>;
  readonly alive: () => boolean;
  readonly kill: (signal: NodeJS.Signals) => void;
  /** Stops reading the child's output for `ms`: its writes queue in the child meanwhile. */
  readonly readLater: (ms: number) => void;
}

function run(kind: string, unref = false): { file: string; proc: Run } {
  const file = `${dir.path}/life-${++n}.db`;
  const child = spawn(process.execPath, [script, file, kind, ...(unref ? ['unref'] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  let done = false;
  child.on('exit', () => (done = true));
  // 'close', not 'exit': the child can end before this side has read what it left in the pipe
  // (seen under load: 'exit' came with 279 of 2,000 lines read, 'close' with all of them).
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return {
    file,
    proc: {
      output: () => out,
      exited,
      alive: () => !done,
      kill: (signal) => child.kill(signal),
      readLater: (ms) => {
        child.stdout.pause();
        setTimeout(() => child.stdout.resume(), ms);
      },
    },
  };
}

const waitFor = async (what: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> => {
  for (const end = Date.now() + ms; !(await what());) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
};

/**
 * Waits until a lease in the file has been renewed since now: the process is past its main code
 * and still at work, on timers alone (a process kept up by nothing would have exited by then).
 */
async function renewedIn(file: string): Promise<void> {
  const store = await SqliteStore.open(file);
  try {
    const latest = async (): Promise<number> =>
      Math.max(0, ...(await store.list({ prefix: '' })).map((r) => r.expiresAt));
    const first = await latest();
    await waitFor(async () => (await latest()) > first);
  } finally {
    await store.close();
  }
}

it('a started manager keeps the process alive until SIGTERM, which releases everything', async () => {
  const { file, proc } = run('manager');
  await waitFor(() => proc.output().includes('started 2'));
  await renewedIn(file);
  expect(proc.alive()).toBe(true);
  proc.kill('SIGTERM');
  await proc.exited;
  const store = await SqliteStore.open(file);
  try {
    expect((await store.list({ prefix: 'job/' })).map((r) => r.owner)).toEqual(['', '']);
  } finally {
    await store.close();
  }
});

it('on SIGTERM, every line the manager printed on its way out reaches a reader that lags', async () => {
  const { proc } = run('manager-loud');
  await waitFor(() => proc.output().includes('started 2000'));
  // 2,000 lines of ~120 bytes overflow the pipe; the rest waits in the child's queue, which a
  // process ended by the signal at once would take with it.
  proc.readLater(500);
  proc.kill('SIGTERM');
  await proc.exited;
  const released = new Set(proc.output().match(/^released \S+/gm));
  expect(released.size).toBe(2000);
});

it('manager.unref() lets the process exit once start() resolved', async () => {
  const { proc } = run('manager', true);
  expect(await proc.exited).toBe(0);
  expect(proc.output()).toContain('started 2');
});

it('an election keeps the process alive until stopped; unref() lets it exit', async () => {
  const { file, proc } = run('elect');
  await waitFor(() => proc.output().includes('elected'));
  await renewedIn(file);
  expect(proc.alive()).toBe(true);
  proc.kill('SIGTERM');
  expect(await proc.exited).toBe(0);
  expect(proc.output()).toContain('stopped');
  const unrefed = run('elect', true).proc;
  expect(await unrefed.exited).toBe(0);
});

it('a client holding an auto-renewed lease keeps the process alive until the lease is released', async () => {
  const { file, proc } = run('client');
  await waitFor(() => proc.output().includes('holding 1'));
  await renewedIn(file); // past a heartbeat: still renewing, still up
  expect(proc.alive()).toBe(true);
  proc.kill('SIGTERM');
  expect(await proc.exited).toBe(0);
  expect(proc.output()).toContain('released');
  const store = await SqliteStore.open(file);
  try {
    expect(await store.get('job/a')).toMatchObject({ owner: '', token: 1 });
  } finally {
    await store.close();
  }
});

it('once its last lease is released, or after client.unref(), the process exits on its own', async () => {
  const released = run('client-release').proc;
  expect(await released.exited).toBe(0);
  expect(released.output()).toContain('holding 1');
  const unrefed = run('client', true).proc;
  expect(await unrefed.exited).toBe(0);
  expect(unrefed.output()).toContain('holding 1');
});
