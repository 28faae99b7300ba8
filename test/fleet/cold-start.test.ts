import { afterEach, expect, it } from 'vitest';
import { Fleet, names, type Worker } from './fleet-rig.js';

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.stopAll();
  fleet = undefined;
});

it('workers started together settle the membership first and go straight to balance: no handoffs', async () => {
  fleet = new Fleet({
    resources: names(103),
    ttlMs: 2000,
    heartbeatMs: 500,
    reconcileMs: 1000,
    settleMs: 300,
  });
  const f = fleet;
  let handoffs = 0;
  const joining: Promise<Worker>[] = [];
  // Five workers arrive 100 ms apart, as processes of one deploy do.
  for (let i = 0; i < 5; i++) {
    joining.push(f.join());
    await f.clock.advance(100);
  }
  let all: Worker[] | undefined;
  void Promise.all(joining).then((w) => (all = w));
  for (let t = 0; t < 5000 && !all; t += 50) await f.clock.advance(50);
  expect(all).toHaveLength(5);
  for (const w of all!) w.manager.on('handoff', () => handoffs++);
  await f.clock.advance(5000);
  const counts = f.counts();
  expect(counts.reduce((a, b) => a + b)).toBe(103);
  expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
  expect(handoffs).toBe(0);
  // The first to start took nothing before the others joined: every lease has token 1.
  for (const w of all!) for (const lease of w.manager.held()) expect(lease.token).toBe(1);
});

it('acquires its share in batches: one acquireMany per batch, never one call per resource', async () => {
  fleet = new Fleet({
    resources: names(1200),
    ttlMs: 2000,
    heartbeatMs: 500,
    reconcileMs: 1000,
    batchSize: 250,
  });
  const w = await fleet.join();
  expect(w.manager.held()).toHaveLength(1200);
  expect(w.link.calls.acquireMany).toBe(Math.ceil(1200 / 250));
  // The membership slot, and the brief lease that announces the join.
  expect(w.link.calls.tryAcquire).toBe(2);
});

it('a scan while slow work is still stopping does not shed the same excess twice', async () => {
  fleet = new Fleet({
    resources: names(60),
    ttlMs: 2000,
    heartbeatMs: 500,
    reconcileMs: 1000,
    // Work takes 900 ms to stop after its signal aborts: scans run while handoffs are under way.
    onAcquired: (lease) =>
      new Promise<void>((resolve) =>
        lease.signal.addEventListener('abort', () => {
          const clock = fleet!.clock;
          clock.setTimeout(resolve, 900);
        }),
      ),
  });
  const f = fleet;
  const old = [await f.join(), await f.join()];
  await f.clock.advance(5000);
  let moves = 0;
  for (const w of old) w.manager.on('handoff', () => moves++);
  await f.join();
  for (let t = 0; t < 10_000; t += 100) await f.clock.advance(100);
  const counts = f.counts();
  const stopping = f.stopAll(); // the slow work needs the clock to move to finish stopping
  for (let t = 0; t < 3000; t += 100) await f.clock.advance(100);
  await stopping;
  fleet = undefined;
  expect(counts).toEqual([20, 20, 20]);
  expect(moves).toBe(20);
});
