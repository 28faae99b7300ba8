import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { BucketManager, SqliteStore } from '../../src/index.js';
import { tempDir, waitFor } from '../harness/processes.js';

// Buckets on a real store (SQLite, real clock, one connection per worker): three workers share 32
// buckets, each resource is covered by exactly one of them, and when one stops its buckets are
// taken over with higher tokens. The waits are bounds far above what the steps take, not timings.

const dir = tempDir('leasehold-buckets-sqlite-');
const managers: BucketManager[] = [];
const stores: SqliteStore[] = [];
afterAll(async () => {
  await Promise.allSettled(managers.map((m) => m.stop({ timeoutMs: 1000 })));
  await Promise.allSettled(stores.map((s) => s.close()));
  dir.cleanup();
});

const resources = Array.from({ length: 500 }, (_, i) => `customer/${i}`);

async function worker(id: string, buckets = 32): Promise<BucketManager> {
  const store = await SqliteStore.open(join(dir.path, 'fleet.db'));
  stores.push(store);
  const manager = new BucketManager({
    store,
    owner: id,
    buckets,
    group: 'customers',
    ttlMs: 3000,
    heartbeatMs: 500,
    reconcileMs: 1000,
    settleMs: 200,
  });
  managers.push(manager);
  return manager;
}

it('three workers cover every resource exactly once; a leaver’s buckets go to the others with higher tokens; another count is refused', async () => {
  const ws = [await worker('a'), await worker('b'), await worker('c')];
  await Promise.all(ws.map((w) => w.start()));
  const covering = (r: string, among = ws): BucketManager[] =>
    among.filter((w) => w.leaseFor(r)?.isValid());
  const counts = (among = ws): number[] => among.map((w) => w.heldBuckets().length);
  await waitFor('three even shares', () => counts().sort().join() === '10,11,11', 20_000);
  for (const r of resources) expect(covering(r), r).toHaveLength(1);

  const before = new Map(resources.map((r) => [r, covering(r)[0]!.leaseFor(r)!.token]));
  const left = resources.filter((r) => ws[0]!.leaseFor(r));
  await ws[0]!.stop();
  const rest = ws.slice(1);
  await waitFor('the leaver’s buckets taken', () => counts(rest).sort().join() === '16,16', 20_000);
  for (const r of resources) {
    const [holder] = covering(r, rest);
    expect(holder, r).toBeDefined();
    const token = holder!.leaseFor(r)!.token;
    if (left.includes(r)) expect(token).toBeGreaterThan(before.get(r)!);
    else expect(token).toBe(before.get(r));
  }

  const odd = await worker('d', 64);
  await expect(odd.start()).rejects.toThrow(/buckets is 64.*32/);
  expect(odd.held()).toEqual([]);
  expect(counts(rest).sort().join()).toBe('16,16');
});
