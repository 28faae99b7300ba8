import { expect, it } from 'vitest';
import { LeaseClient, MemoryStore, type HeldLease } from '../../src/index.js';
import { Taker } from '../../src/fleet/taker.js';
import { systemClock, type Clock } from '../../src/core/time.js';
import { ManualClock } from '../../src/testing/index.js';
import { FaultyStore } from '../harness/faulty-store.js';
import { waitFor } from '../harness/processes.js';

function taker(
  maxInFlight: number,
  batchSize = 2,
  busy = () => false,
  clock: Clock = systemClock,
  memory = new MemoryStore(),
) {
  const store = new FaultyStore(memory);
  const client = new LeaseClient({ store, owner: 'me', ttlMs: 60_000 });
  const acquired: HeldLease[] = [];
  const errors: unknown[] = [];
  const refused: string[] = [];
  const t = new Taker({
    client,
    clock,
    batchSize,
    maxInFlight,
    onAcquired: (lease) => acquired.push(lease),
    slowMs: 60_000,
    busy,
    recheckMs: 5,
    onRefused: (resource) => refused.push(resource),
    onError: (error) => errors.push(error),
  });
  return { t, client, store, acquired, errors, refused };
}

it('overlapping takes never ask the store for a resource already held or being taken', async () => {
  const { t, client, acquired } = taker(1);
  const [a, b] = await Promise.all([
    t.take(['a', 'b', 'c', 'd'], () => 4 - client.size),
    t.take(['d', 'c', 'b', 'a'], () => 4 - client.size),
  ]);
  expect(a + b).toBe(4);
  expect(acquired.map((l) => l.resource).sort()).toEqual(['a', 'b', 'c', 'd']);
  await client.close();
});

it('never takes more than asked, in batches of batchSize with at most maxInFlight calls at once', async () => {
  const { t, client, store } = taker(2, 3);
  let inFlight = 0;
  let most = 0;
  const inner = store.acquireMany.bind(store);
  store.acquireMany = async (...args) => {
    most = Math.max(most, ++inFlight);
    try {
      return await inner(...args);
    } finally {
      inFlight--;
    }
  };
  const names = Array.from({ length: 20 }, (_, i) => `r/${i}`);
  expect(await t.take(names, () => 7 - client.size)).toBe(7);
  expect(client.size).toBe(7);
  expect(most).toBeLessThanOrEqual(2);
  expect(store.calls.acquireMany).toBe(3); // 3 + 3 + 1
  await client.close();
});

it('while renewals are behind, no bulk batch starts; takes go on once they catch up', async () => {
  let busy = true;
  let asked = 0;
  const { t, client, store } = taker(4, 1, () => (asked++, busy));
  let inFlight = 0;
  let most = 0;
  let sent = 0;
  const inner = store.acquireMany.bind(store);
  store.acquireMany = async (...args) => {
    sent++;
    most = Math.max(most, ++inFlight);
    await new Promise((r) => setTimeout(r, 5));
    try {
      return await inner(...args);
    } finally {
      inFlight--;
    }
  };
  const taking = t.take(['a', 'b', 'c', 'd', 'e', 'f'], () => 6 - client.size);
  // It asked three times (rechecking every 5 ms), found renewals behind each time, sent nothing.
  await waitFor('three rechecks', () => asked >= 3, 5000, 1);
  expect(sent).toBe(0);
  busy = false;
  expect(await taking).toBe(6);
  expect(most).toBeGreaterThan(1);
  await client.close();
});

it('a stopped taker stops waiting for renewals to catch up: at once, not at the next recheck (a stopping manager waits for it)', async () => {
  // On a clock that never moves, the recheck never comes: only stop() can end these waits.
  let asked = 0;
  const { t, client, store } = taker(2, 1, () => (asked++, true), new ManualClock());
  let settled = false;
  const taking = t.take(['a', 'b', 'c'], () => 3 - client.size).finally(() => (settled = true));
  await waitFor('the take to find renewals behind', () => asked >= 1, 5000, 1);
  expect(settled).toBe(false);
  t.stop();
  expect(await taking).toBe(0);
  expect(store.calls.acquireMany).toBe(0);
  await client.close();
});

it('two takes running at once share one room: together they never take more than it allows', async () => {
  const { t, client } = taker(2, 3);
  const names = Array.from({ length: 30 }, (_, i) => `r/${i}`);
  const room = () => 10 - client.size;
  const [a, b] = await Promise.all([t.take(names, room), t.take([...names].reverse(), room)]);
  expect(a + b).toBe(10);
  expect(client.size).toBe(10);
  await client.close();
});

it('a resource announced free while a batch of ours tries it is tried again once that batch is refused, not held off', async () => {
  const memory = new MemoryStore();
  const other = new LeaseClient({ store: memory, owner: 'other', ttlMs: 60_000 });
  const theirs = await other.acquire('x');
  const { t, client, store, acquired, refused } = taker(2, 2, () => false, systemClock, memory);
  // The batch reads the record while 'other' holds it; its answer comes back after the release.
  const inner = store.acquireMany.bind(store);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let calls = 0;
  store.acquireMany = async (...args) => {
    const outcomes = await inner(...args);
    if (++calls === 1) await released;
    return outcomes;
  };
  const first = t.take(['x'], () => 1 - client.size);
  await waitFor('the first batch to be sent', () => calls === 1);
  await theirs.release();
  t.soon('x', () => 1 - client.size); // the release, announced while the batch is in flight
  release();
  expect(await first).toBe(0);
  await waitFor('x to be taken', () => acquired.length === 1);
  expect(acquired[0]!.resource).toBe('x');
  expect(refused).toEqual([]); // not held off for a scan
  expect(calls).toBe(2);
  await client.close();
  await other.close();
});

it('a refusal with no announcement during the attempt is reported, and not tried again', async () => {
  const memory = new MemoryStore();
  const other = new LeaseClient({ store: memory, owner: 'other', ttlMs: 60_000 });
  await other.acquire('x');
  const { t, client, store, refused } = taker(2, 2, () => false, systemClock, memory);
  expect(await t.take(['x'], () => 1 - client.size)).toBe(0);
  t.soon('y', () => 0); // an announcement of another resource, with no room: nothing is sent
  await new Promise((r) => setTimeout(r, 50));
  expect(refused).toEqual(['x']);
  expect(store.calls.acquireMany).toBe(1);
  await client.close();
  await other.close();
});

it('a resource announced free while batches in flight ask for all the room is tried once a refusal leaves room, not dropped', async () => {
  const memory = new MemoryStore();
  const other = new LeaseClient({ store: memory, owner: 'other', ttlMs: 60_000 });
  await other.acquire('x');
  const { t, client, store, acquired, refused } = taker(2, 2, () => false, systemClock, memory);
  // The batch for 'x' (held: refused) is slow to answer; meanwhile 'y' is announced free.
  const inner = store.acquireMany.bind(store);
  let answer!: () => void;
  const answered = new Promise<void>((r) => (answer = r));
  store.acquireMany = async (...args) => {
    const outcomes = await inner(...args);
    if (args[0].includes('x')) await answered;
    return outcomes;
  };
  const room = (): number => 1 - client.size;
  const first = t.take(['x'], room);
  await waitFor('the batch for x to be sent', () => store.calls.acquireMany === 1);
  t.soon('y', room); // no room left beside the batch in flight: not sent now
  await new Promise((r) => setTimeout(r, 50));
  expect(store.calls.acquireMany).toBe(1);
  answer();
  expect(await first).toBe(0);
  expect(refused).toEqual(['x']);
  // The refusal left room: 'y' is tried then, not left for the next scan.
  await waitFor('y to be taken', () => acquired.length === 1);
  expect(acquired[0]!.resource).toBe('y');
  await client.close();
  await other.close();
});
