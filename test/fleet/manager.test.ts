import { afterEach, describe, expect, it } from 'vitest';
import { Fleet, names } from './fleet-rig.js';

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.stopAll();
  fleet = undefined;
});

const TTL = 2000;
const HB = 500;
const RECONCILE = 1000;

function newFleet(resources = names(100)) {
  fleet = new Fleet({ resources, ttlMs: TTL, heartbeatMs: HB, reconcileMs: RECONCILE });
  return fleet;
}

function expectExclusive(f: Fleet): void {
  for (const [resource, holders] of f.holders()) expect(holders, resource).toHaveLength(1);
}

describe('LeaseManager', () => {
  it('a lone worker takes every wanted resource and runs its work', async () => {
    const f = newFleet(names(10));
    const w = await f.join();
    expect(
      w.manager
        .held()
        .map((l) => l.resource)
        .sort(),
    ).toEqual(names(10));
    expect([...w.working].sort()).toEqual(names(10));
  });

  it('four workers converge to 25 ± 1 each within 3 scans, a fifth joining to 20 ± 1 within 5, and then stay put', async () => {
    const f = newFleet();
    for (let i = 0; i < 4; i++) await f.join();
    for (let i = 0; i < 3; i++) {
      await f.clock.advance(RECONCILE);
      expectExclusive(f);
    }
    expect(f.counts().reduce((a, b) => a + b)).toBe(100);
    for (const n of f.counts()) expect(Math.abs(n - 25)).toBeLessThanOrEqual(1);
    await f.join();
    for (let i = 0; i < 5; i++) {
      await f.clock.advance(RECONCILE);
      expectExclusive(f);
    }
    expect(f.counts().reduce((a, b) => a + b)).toBe(100);
    for (const n of f.counts()) expect(Math.abs(n - 20)).toBeLessThanOrEqual(1);
    // Damping: once balanced, nothing moves.
    let moves = 0;
    for (const w of f.workers) w.manager.on('handoff', () => moves++);
    const settled = f.counts();
    for (let i = 0; i < 10; i++) await f.clock.advance(RECONCILE);
    expect(moves).toBe(0);
    expect(f.counts()).toEqual(settled);
  });

  it('reclaims a crashed worker’s resources at about the TTL, not at TTL plus a scan', async () => {
    const f = newFleet(names(40));
    const workers = [await f.join(), await f.join()];
    await f.clock.advance(5 * RECONCILE);
    const victim = workers[0]!;
    const orphaned = victim.manager.held().map((l) => l.resource);
    expect(orphaned.length).toBeGreaterThan(0);
    victim.link.mode = 'hang'; // SIGKILL or a partition: its renewals never arrive
    const crashedAt = f.clock.now();
    let recoveredAt = -1;
    for (let t = 0; t < 4 * TTL; t += 50) {
      await f.clock.advance(50);
      expectExclusive(f);
      const survivor = new Set(workers[1]!.manager.held().map((l) => l.resource));
      if (recoveredAt < 0 && orphaned.every((r) => survivor.has(r))) recoveredAt = f.clock.now();
    }
    expect(recoveredAt).toBeGreaterThan(0);
    const took = recoveredAt - crashedAt;
    expect(took).toBeGreaterThanOrEqual(TTL - HB);
    // On the fleet's manual clock: how the timers are arranged, not how fast the machine is.
    expect(took).toBeLessThanOrEqual(TTL + 200); // the expiry timer, not the next scan
    expect(workers[1]!.manager.held()).toHaveLength(40);
  });

  it('a settled, healthy fleet spends no store calls on takeover attempts', async () => {
    const f = newFleet(names(40));
    const workers = [await f.join(), await f.join(), await f.join()];
    await f.clock.advance(10 * RECONCILE);
    const before = workers.map((w) => ({ ...w.link.calls }));
    await f.clock.advance(20 * RECONCILE);
    workers.forEach((w, i) => {
      expect(w.link.calls.tryAcquire - before[i]!.tryAcquire).toBe(0);
      expect(w.link.calls.acquireMany - before[i]!.acquireMany).toBe(0);
      // Per worker and scan: one list of the members; per heartbeat: one renewMany for all its leases.
      expect(w.link.calls.list - before[i]!.list).toBeLessThanOrEqual(
        (20 * RECONCILE) / (0.8 * RECONCILE) + 1,
      );
      expect(w.link.calls.renew).toBe(0);
      expect(w.link.calls.renewMany - before[i]!.renewMany).toBeLessThanOrEqual(
        (20 * RECONCILE) / HB + 1,
      );
    });
  });

  it('stop() aborts the work, then releases its leases in one releaseMany and its membership after, and peers take over', async () => {
    const f = newFleet(names(20));
    const [a, b] = [await f.join(), await f.join()];
    await f.clock.advance(5 * RECONCILE);
    const mine = a.manager.held();
    expect(mine.length).toBeGreaterThan(0);
    let workStillRunningAtRelease = 0;
    const released: string[] = [];
    a.manager.on('released', (lease) => {
      released.push(lease.resource);
      if (a.working.has(lease.resource)) workStillRunningAtRelease++;
    });
    // Every release call, in order, with the resources it carried.
    const order: string[][] = [];
    const link = a.link as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    for (const method of ['release', 'releaseMany'] as const) {
      const original = link[method]!.bind(a.link);
      link[method] = (leases: unknown, ...rest: unknown[]) => {
        const list = (Array.isArray(leases) ? leases : [leases]) as { resource: string }[];
        order.push(list.map((l) => l.resource));
        return original(leases, ...rest);
      };
    }
    await a.manager.stop();
    // First every wanted lease in one call; then the membership, so a peer that sees this worker
    // gone finds its records free; then the brief lease that announces the leave.
    expect(order[0]!.sort()).toEqual(mine.map((l) => l.resource).sort());
    expect(order[1]).toHaveLength(1);
    expect(order[1]![0]).toMatch(/^leasehold\/members\/default\/@/);
    expect(order[2]).toEqual(['leasehold/members/default/~generation']);
    expect(order).toHaveLength(3);
    expect(workStillRunningAtRelease).toBe(0);
    expect(released.sort()).toEqual(mine.map((l) => l.resource).sort());
    expect(a.working.size).toBe(0);
    await f.clock.advance(2 * RECONCILE);
    expect(b.manager.held()).toHaveLength(20);
  });

  it('follows a changing wanted set: takes new resources and hands back unwanted ones', async () => {
    let wanted = names(5);
    const f = newFleet();
    const w = await f.join({ resources: () => wanted });
    expect(w.manager.held()).toHaveLength(5);
    wanted = [...names(3), 'extra/1'];
    await f.clock.advance(RECONCILE * 1.3);
    expect(
      w.manager
        .held()
        .map((l) => l.resource)
        .sort(),
    ).toEqual([...names(3), 'extra/1'].sort());
    expect((await f.store.get(names(5)[4]!))!.owner).toBe('');
  });

  it('maxLeases caps what one worker takes', async () => {
    const f = newFleet(names(10));
    const w = await f.join({ maxLeases: 3, balance: false });
    await f.clock.advance(3 * RECONCILE);
    expect(w.manager.held()).toHaveLength(3);
  });

  it('a worker handing leases over takes none back while its releaseMany is still on the wire', async () => {
    const f = newFleet(names(40));
    const old = [await f.join(), await f.join()];
    await f.clock.advance(3 * RECONCILE);
    expect(f.counts()).toEqual([20, 20]);
    // The store releases at once, but the answers come back only at the end; the newcomer's
    // takes stay on the wire too, so what the old workers shed stays free meanwhile.
    const late: (() => void)[] = [];
    let delaying = true;
    const delay = async <T>(result: T): Promise<T> => {
      if (delaying) await new Promise<void>((resolve) => late.push(resolve));
      return result;
    };
    for (const w of old) {
      const inner = w.link.releaseMany.bind(w.link);
      w.link.releaseMany = async (leases) => delay(await inner(leases));
    }
    let oldTook = 0;
    for (const w of old) w.manager.on('acquired', () => oldTook++);
    try {
      const newcomer = await f.join();
      const take = newcomer.link.acquireMany.bind(newcomer.link);
      newcomer.link.acquireMany = async (...args) => delay(await take(...args));
      for (let i = 0; i < 6; i++) {
        await f.clock.advance(RECONCILE / 4);
        expectExclusive(f);
      }
      // Each old worker shed what is over its share and took nothing back meanwhile.
      expect(f.counts(old).reduce((a, b) => a + b)).toBeLessThanOrEqual(27);
      expect(oldTook).toBe(0);
    } finally {
      delaying = false;
      late.splice(0).forEach((answer) => answer());
    }
  });

  it('workers restarting with fresh owner ids reuse membership slots: the records stay as many as the largest membership', async () => {
    const f = newFleet(names(20));
    for (let i = 0; i < 3; i++) await f.join();
    // Slots, and the one generation record that announces changes.
    const memberRecords = async () =>
      (await f.store.list({ prefix: 'leasehold/members/' })).filter(
        (r) => !r.resource.endsWith('/~generation'),
      ).length;
    expect(await memberRecords()).toBe(3);
    for (let round = 0; round < 10; round++) {
      // One worker stops (its slot is released) and a new one, with a new owner id, starts.
      await f.workers.shift()!.manager.stop();
      await f.join();
      await f.clock.advance(RECONCILE);
      expectExclusive(f);
    }
    expect(await memberRecords()).toBe(3);
    // A crashed worker's slot is reused once its membership expired.
    const crashed = f.workers.shift()!;
    crashed.link.mode = 'hang';
    await f.clock.advance(TTL + 500);
    await f.join();
    expect(await memberRecords()).toBe(3);
    await f.clock.advance(3 * RECONCILE);
    expect(f.counts().reduce((a, b) => a + b)).toBe(20);
    f.workers.push(crashed); // stopped with the others
  });

  it('refuses a second live worker with the same owner id', async () => {
    const f = newFleet(names(4));
    await f.join({ owner: 'same' });
    await expect(f.join({ owner: 'same' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: /owner id "same"/,
    });
    f.workers.pop();
  });

  it('rejects bad options naming the field', async () => {
    const f = newFleet();
    await expect(f.join({ reconcileMs: 1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: /reconcileMs/,
    });
    await expect(f.join({ resources: 'x' as never })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: /resources/,
    });
    await expect(f.join({ resources: ['leasehold/members/x'] })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    f.workers.length = 0;
  });
});

describe('LeaseManager membership at fleet size', () => {
  const N = 16;
  const W = 320;

  async function settledFleet(): Promise<Fleet> {
    const f = newFleet(names(W));
    for (let i = 0; i < N; i++) await f.join();
    await f.clock.advance(6 * RECONCILE);
    expect(f.counts().reduce((a, b) => a + b)).toBe(W);
    return f;
  }

  const total = (f: Fleet, method: 'list' | 'get'): number =>
    f.workers.reduce((sum, w) => sum + w.link.calls[method], 0);

  it('a settled fleet reads the one generation record per worker and scan or beat, and every membership record only a few times per scan period in all', async () => {
    const f = await settledFleet();
    const lists = total(f, 'list');
    const gets = total(f, 'get');
    const periods = 20;
    await f.clock.advance(periods * RECONCILE);
    // Per worker and period: one read at each scan (about one per period, jittered ±20 %) and one
    // with each membership heartbeat (this store cannot watch).
    const perWorker = (total(f, 'get') - gets) / N / periods;
    expect(perWorker).toBeGreaterThanOrEqual(1 / 1.2 + RECONCILE / HB - 0.5);
    expect(perWorker).toBeLessThanOrEqual(1 / 0.8 + RECONCILE / HB + 0.5);
    // Full membership reads: about FULL_READS_PER_SCAN (3) per period across the fleet, where
    // reading at every scan would make N (16) per period. The bound leaves room for chance.
    const fullReads = total(f, 'list') - lists;
    expect(fullReads / periods).toBeLessThanOrEqual(6);
    expect(fullReads).toBeGreaterThan(0);
    expectExclusive(f);
  });

  it('a join is announced: every worker takes the newcomer into its view within a scan, and the newcomer reaches its share', async () => {
    const f = await settledFleet();
    const views = new Map<string, number>();
    for (const w of f.workers)
      w.manager.on('members', (members) => views.set(w.id, members.length));
    const newcomer = await f.join();
    for (let i = 0; i < 4; i++) {
      await f.clock.advance(RECONCILE);
      expectExclusive(f);
    }
    for (const w of f.workers) if (w !== newcomer) expect(views.get(w.id), w.id).toBe(N + 1);
    expect(f.counts().reduce((a, b) => a + b)).toBe(W);
    for (const n of f.counts()) expect(Math.abs(n - W / (N + 1))).toBeLessThanOrEqual(1);
  });

  it('a worker that dies without a word is found by the sampling and announced: its resources are taken and shares even out', async () => {
    const f = await settledFleet();
    const victim = f.workers[3]!;
    const orphaned = victim.manager.held().map((l) => l.resource);
    victim.link.mode = 'hang';
    const crashedAt = f.clock.now();
    let recoveredAt = -1;
    for (let t = 0; t < 4 * TTL + 4 * RECONCILE; t += 100) {
      await f.clock.advance(100);
      expectExclusive(f);
      if (recoveredAt >= 0) continue;
      const held = new Set(f.live().flatMap((w) => w.manager.held().map((l) => l.resource)));
      if (orphaned.every((r) => held.has(r))) recoveredAt = f.clock.now();
    }
    expect(recoveredAt).toBeGreaterThan(0);
    // At the victim's expiry where a sampling worker saw it stop renewing, else at a scan after.
    expect(recoveredAt - crashedAt).toBeLessThanOrEqual(TTL + 2 * RECONCILE + 500);
    const counts = f.counts();
    expect(counts.reduce((a, b) => a + b)).toBe(W);
    for (const n of counts) expect(Math.abs(n - W / (N - 1))).toBeLessThanOrEqual(1);
  });
});

describe('LeaseManager: a leave right after a join', () => {
  let fleet: Fleet | undefined;
  afterEach(async () => {
    await fleet?.stopAll();
    fleet = undefined;
  });

  // After a join, a short worker waits before searching every record (the others are shedding
  // for the newcomer). A leave is different: nobody sheds, the leaver's records are free. A leave
  // soon after a join once kept that wait, so the last free records waited for the next scan.
  it('settles within a heartbeat and a bit, without waiting out the join', async () => {
    const resources = names(240);
    fleet = new Fleet({ resources, ttlMs: 10_000, heartbeatMs: 2000, reconcileMs: 5000 });
    const f = fleet;
    for (let i = 0; i < 5; i++) await f.join();
    await f.clock.advance(20_000);
    expect(f.counts()).toEqual([48, 48, 48, 48, 48]);
    await f.join();
    // Without watch, the newcomer finds what the others shed at its next scan.
    for (let t = 0; t < 10_000 && f.counts().reduce((a, b) => a + b) < 240; t += 100)
      await f.clock.advance(100);
    expect(f.counts().reduce((a, b) => a + b)).toBe(240);
    const leaver = f.workers.shift()!;
    await leaver.manager.stop({ timeoutMs: 100 });
    let heldAt: number | undefined;
    for (let t = 0; t < 10_000 && heldAt === undefined; t += 100) {
      await f.clock.advance(100);
      if (f.counts().reduce((a, b) => a + b) === 240) heldAt = t + 100;
    }
    // The survivors hear of the leave at their next membership heartbeat (this store cannot
    // watch), then take the leaver's records at once: not at the next scan, 4–6 s away.
    expect(heldAt).toBeDefined();
    expect(heldAt!).toBeLessThanOrEqual(2500);
    f.workers.push(leaver);
  });
});
