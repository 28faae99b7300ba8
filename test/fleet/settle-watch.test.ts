import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { LeaseManager, SqliteStore } from '../../src/index.js';
import { tempDir } from '../harness/processes.js';

// A join and a graceful leave on a store that announces releases (SQLite, real clock): settled
// from what the store announced, not at a scan. The scan period is a minute, so a worker that
// left a shed or released lease for its next scan would show as short for tens of seconds; the
// waits below are bounds far under that, not timings.

const dir = tempDir('leasehold-settle-watch-');
const managers: LeaseManager[] = [];
const stores: SqliteStore[] = [];
afterAll(async () => {
  await Promise.allSettled(managers.map((m) => m.stop({ timeoutMs: 1000 })));
  await Promise.allSettled(stores.map((s) => s.close()));
  dir.cleanup();
});

const N = 5;
const W = 600;
const resources = Array.from({ length: W }, (_, i) => `shard/${String(i).padStart(3, '0')}`);

async function worker(id: string): Promise<LeaseManager> {
  const store = await SqliteStore.open(join(dir.path, 'fleet.db'));
  stores.push(store);
  const manager = new LeaseManager({
    store,
    owner: id,
    resources,
    ttlMs: 6000,
    heartbeatMs: 1500,
    reconcileMs: 60_000,
    settleMs: 300,
  });
  managers.push(manager);
  return manager;
}

async function balanced(live: LeaseManager[], within: number): Promise<number[]> {
  let counts: number[] = [];
  for (const end = Date.now() + within; Date.now() < end;) {
    counts = live.map((m) => m.held().length);
    const fair = W / live.length;
    if (counts.reduce((a, b) => a + b, 0) === W && counts.every((n) => Math.abs(n - fair) < 1))
      return counts;
    await new Promise((r) => setTimeout(r, 50));
  }
  return counts;
}

it('a join settles from what the others shed for the newcomer, and a graceful leave from what the leaver released, not at the next scan', async () => {
  const fleet: LeaseManager[] = [];
  for (let i = 0; i < N; i++) fleet.push(await worker(`w${i}`));
  await Promise.all(fleet.map((m) => m.start()));
  expect(await balanced(fleet, 15_000)).toEqual(fleet.map(() => W / N));

  const shed: string[] = [];
  for (const m of fleet) m.on('handoff', (lease) => shed.push(lease.resource));
  const newcomer = await worker('new');
  const took: string[] = [];
  newcomer.on('acquired', (lease) => took.push(lease.resource));
  await newcomer.start();
  fleet.push(newcomer);
  const joined = await balanced(fleet, 15_000);
  expect(joined.reduce((a, b) => a + b, 0)).toBe(W);
  expect(Math.max(...joined) - Math.min(...joined)).toBeLessThanOrEqual(1);
  // Exactly the newcomer's share moved, all of it to the newcomer.
  expect(took.sort()).toEqual(shed.sort());
  expect(took).toHaveLength(W / (N + 1));

  const leaver = fleet.shift()!;
  await leaver.stop();
  const left = await balanced(fleet, 15_000);
  expect(left.reduce((a, b) => a + b, 0)).toBe(W);
  expect(Math.max(...left) - Math.min(...left)).toBeLessThanOrEqual(1);
}, 60_000);
