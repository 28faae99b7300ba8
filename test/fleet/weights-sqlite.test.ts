import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { LeaseManager, SqliteStore } from '../../src/index.js';
import { membersPrefix } from '../../src/fleet/members.js';
import { tempDir } from '../harness/processes.js';

// Load reports on a real store (SQLite, real clock): the report is written as the membership
// record's lease data, read back by the other worker through `list`, and moves the hot resource
// to balance. The waits are bounds far above what the steps take, not timings.

const dir = tempDir('leasehold-weights-sqlite-');
const managers: LeaseManager[] = [];
const stores: SqliteStore[] = [];
afterAll(async () => {
  await Promise.allSettled(managers.map((m) => m.stop({ timeoutMs: 1000 })));
  await Promise.allSettled(stores.map((s) => s.close()));
  dir.cleanup();
});

const resources = Array.from({ length: 20 }, (_, i) => `shard/${String(i).padStart(2, '0')}`);

async function worker(id: string, capacity?: number): Promise<LeaseManager> {
  const store = await SqliteStore.open(join(dir.path, 'fleet.db'));
  stores.push(store);
  const manager = new LeaseManager({
    store,
    owner: id,
    resources,
    ttlMs: 3000,
    heartbeatMs: 500,
    reconcileMs: 1000,
    settleMs: 200,
    ...(capacity === undefined ? {} : { capacity }),
  });
  managers.push(manager);
  return manager;
}

async function until(test: () => boolean, within: number): Promise<boolean> {
  for (const end = Date.now() + within; Date.now() < end;) {
    if (test()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return test();
}

it('a reported load is written with the membership, read by the other worker, and balanced by capacity', async () => {
  const a = await worker('a');
  const b = await worker('b', 3);
  await Promise.all([a.start(), b.start()]);
  // Capacity 3 against 1: 15 and 5 of 20 equal resources.
  expect(await until(() => a.held().length === 5 && b.held().length === 15, 15_000)).toBe(true);
  expect(b.loadStatus()).toMatchObject({ weighted: true, fair: 15 });

  const hot = b.held()[0]!.resource;
  expect(b.reportLoad(hot, 16)).toBe(true); // total 35: fair 8.75 and 26.25
  const heavy = (m: LeaseManager): number =>
    m.held().reduce((sum, l) => sum + (l.resource === hot ? 16 : 1), 0);
  expect(
    await until(
      () =>
        a.loadStatus().fair === 8.75 &&
        a.held().length + b.held().length === 20 &&
        heavy(a) <= 8.75 * 1.1 &&
        heavy(b) <= 26.25 * 1.1,
      15_000,
    ),
  ).toBe(true);
  // The report is in b's membership record, as lease data a peer reads with `list`.
  const records = await stores[0]!.list({ prefix: membersPrefix('default') });
  const published = records.find((r) => r.owner === 'b' && typeof r.data === 'string');
  // With its load and fair load (for the dashboard), as last published.
  const data = JSON.parse(published!.data as string) as { w?: unknown };
  expect(data).toMatchObject({ o: 'b', l: { [hot]: 16 } });
  expect(data.w).toEqual([expect.any(Number), expect.any(Number)]);
  expect(published!.resource).toMatch(/#cap=3$/);
}, 40_000);
