import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { SqliteStore } from '../../src/index.js';
import { tempDir } from '../harness/processes.js';

const worker = fileURLToPath(new URL('./fresh-open-worker.mjs', import.meta.url));
const dir = tempDir('leasehold-fresh-open-');
afterAll(() => dir.cleanup());

type Result = { round: number; owner: string } & (
  | { kind: 'result'; granted: { resource: string; token: number }[]; refused: string[] }
  | { kind: 'error'; code?: string; message: string }
);

interface Worker {
  readonly child: ChildProcess;
  readonly lines: AsyncIterator<string>;
}

const PROCESSES = 6;
/** Fresh files, each opened by every process at one instant (the race is rare per open). */
const ROUNDS = 30;
/** Lead time of a start instant: every process is spinning on it before it comes. */
const LEAD_MS = 50;
const POOL = Array.from({ length: 8 }, (_, i) => `r/${i}`);

function start(id: number): Worker {
  // Each process wants 4 of the 8 resources, overlapping its neighbours'.
  const wanted = Array.from({ length: 4 }, (_, k) => POOL[(id + k * 2) % POOL.length]!);
  const args = [worker, dir.path, String(id), wanted.join(',')];
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return { child, lines };
}

async function nextLine(w: Worker): Promise<string> {
  const { value, done } = await w.lines.next();
  if (done) throw new Error(`worker ${w.child.pid} ended early`);
  return value;
}

it('processes opening one fresh file at the same instant all succeed, each resource granted once', async () => {
  const workers = Array.from({ length: PROCESSES }, (_, i) => start(i));
  const results: Result[] = [];
  try {
    // A barrier per round: however slow the machine, every process starts each round together.
    for (let round = 0; round < ROUNDS; round++) {
      for (const w of workers) expect(await nextLine(w)).toBe('ready');
      const startAt = Date.now() + LEAD_MS;
      for (const w of workers) w.child.stdin!.write(`${startAt}\n`);
      for (const w of workers) results.push(JSON.parse(await nextLine(w)) as Result);
    }
    for (const w of workers) w.child.stdin!.end();
    await Promise.all(workers.map((w) => (w.child.exitCode === null ? once(w.child, 'exit') : 0)));
  } finally {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  }

  const errors = results.filter((x) => x.kind === 'error');
  expect(errors, JSON.stringify(errors.slice(0, 3))).toEqual([]);
  for (let round = 0; round < ROUNDS; round++) {
    const winners = new Map<string, string[]>();
    for (const x of results) {
      if (x.round !== round || x.kind !== 'result') continue;
      for (const g of x.granted)
        winners.set(g.resource, [...(winners.get(g.resource) ?? []), x.owner]);
    }
    // Every resource went to exactly one process (the leases are long), and the file agrees.
    for (const [resource, owners] of winners)
      expect(owners, `${round} ${resource}`).toHaveLength(1);
    expect([...winners.keys()].sort(), `round ${round}`).toEqual(POOL);
    const store = await SqliteStore.open(`${dir.path}/fresh-${round}.db`);
    const records = await store.list();
    await store.close();
    expect(
      records.map((rec) => [rec.resource, rec.owner, rec.token]),
      `round ${round}`,
    ).toEqual(POOL.map((resource) => [resource, winners.get(resource)![0], 1]));
  }
}, 120_000);
