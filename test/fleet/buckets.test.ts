import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BucketManager,
  bucketOf,
  ErrorCode,
  LeaseError,
  MemoryStore,
  type BucketManagerOptions,
  type HeldBucket,
} from '../../src/index.js';
import { fleetView } from '../../src/cli/dashboard/fleet-view.js';
import { ManualClock } from '../../src/testing/index.js';
import { FaultyStore } from '../harness/faulty-store.js';

const TTL = 1000;
const HB = 250;

const resources = Array.from({ length: 2000 }, (_, i) => `order/${i}`);

interface Worker {
  readonly id: string;
  readonly manager: BucketManager;
  readonly link: FaultyStore;
  readonly working: Set<number>;
}

/** Bucket managers on one manual clock and one memory store, each through its own link. */
class Rig {
  readonly clock = new ManualClock();
  readonly store = new MemoryStore({ clock: this.clock });
  readonly workers: Worker[] = [];
  private n = 0;

  make(options: Partial<BucketManagerOptions> = {}): Worker {
    const id = `w${++this.n}`;
    const link = new FaultyStore(this.store);
    const working = new Set<number>();
    const manager = new BucketManager({
      store: link,
      owner: id,
      clock: this.clock,
      buckets: 64,
      ttlMs: TTL,
      heartbeatMs: HB,
      reconcileMs: 500,
      settleMs: 0,
      onBucket: (bucket: HeldBucket) => {
        working.add(bucket.index);
        return new Promise<void>((resolve) =>
          bucket.lease.signal.addEventListener('abort', () => {
            working.delete(bucket.index);
            resolve();
          }),
        );
      },
      ...options,
    });
    const worker = { id, manager, link, working };
    this.workers.push(worker);
    return worker;
  }

  async join(options: Partial<BucketManagerOptions> = {}): Promise<Worker> {
    const worker = this.make(options);
    await worker.manager.start();
    return worker;
  }

  /** For each resource, the workers whose valid bucket lease covers it. */
  coverage(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const r of resources) {
      const holders = this.workers.filter((w) => w.manager.leaseFor(r)?.isValid());
      out.set(
        r,
        holders.map((w) => w.id),
      );
    }
    return out;
  }

  async stopAll(): Promise<void> {
    for (const w of this.workers) {
      w.link.mode = 'pass';
      w.link.resumeHung();
    }
    await Promise.allSettled(this.workers.map((w) => w.manager.stop({ timeoutMs: 100 })));
  }
}

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.stopAll();
  rig = undefined;
});

describe('bucketOf', () => {
  it('is fixed: the same buckets as when it was written, and the low bits of one hash at every count', () => {
    // Pinned: a change of the hash would move resources between buckets under running fleets.
    expect(['order/0', 'order/1', 'shard-17', 'é', ''].map((r) => bucketOf(r, 1024))).toEqual([
      bucketOf('order/0', 65_536) & 1023,
      bucketOf('order/1', 65_536) & 1023,
      bucketOf('shard-17', 65_536) & 1023,
      bucketOf('é', 65_536) & 1023,
      bucketOf('', 65_536) & 1023,
    ]);
    expect(['order/0', 'order/1', 'shard-17', 'é'].map((r) => bucketOf(r, 65_536))).toEqual(PINNED);
    expect(bucketOf('anything', 1)).toBe(0);
  });

  it('spreads names evenly: 100,000 names over 64 buckets, every bucket within 12 % of the mean (4.7 σ)', () => {
    const counts = new Array<number>(64).fill(0);
    for (let i = 0; i < 100_000; i++) counts[bucketOf(`customer-${i}`, 64)]!++;
    const mean = 100_000 / 64;
    for (const c of counts) expect(Math.abs(c - mean) / mean).toBeLessThan(0.12);
  });

  it.each([0, 3, 100, 131_072, -64, 1.5, NaN, '64', undefined])(
    'refuses %j buckets, naming the option',
    (bad) => {
      expect(() => bucketOf('x', bad as number)).toThrow(/buckets must be a power of two/);
      expect(() => new BucketManager({ store: new MemoryStore(), buckets: bad as number })).toThrow(
        expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }),
      );
    },
  );
});

/** `bucketOf(r, 65536)` of order/0, order/1, shard-17 and é when the hash was fixed. */
const PINNED = [6524, 22981, 30689, 38505];

describe('BucketManager options', () => {
  it('refuses a wanted resource list, a misspelt key, and callbacks that are not functions', () => {
    const store = new MemoryStore();
    const make = (extra: object) =>
      new BucketManager({ store, buckets: 8, ...extra } as BucketManagerOptions);
    expect(() => make({ resources: ['a'] })).toThrow(/unknown option "resources"/i);
    expect(() => make({ onAcquired: () => undefined })).toThrow(/onAcquired/);
    expect(() => make({ bucket: 8 })).toThrow(/did you mean "buckets"/i);
    for (const field of ['weight', 'onBucket', 'onLost'])
      expect(() => make({ [field]: 3 })).toThrow(
        expect.objectContaining({
          code: ErrorCode.INVALID_ARGUMENT,
          message: expect.stringContaining(field),
        }),
      );
  });
});

describe('a bucketed fleet', () => {
  it('shares the buckets evenly, every resource covered by exactly one worker, and work starts per bucket', async () => {
    rig = new Rig();
    const ws = [await rig.join(), await rig.join(), await rig.join(), await rig.join()];
    await rig.clock.advance(3 * TTL);
    expect(ws.map((w) => w.manager.heldBuckets().length)).toEqual([16, 16, 16, 16]);
    for (const [r, holders] of rig.coverage()) {
      expect(holders, r).toHaveLength(1);
      const owner = ws.find((w) => w.id === holders[0])!;
      expect(owner.working.has(owner.manager.bucketOf(r))).toBe(true);
      expect(owner.manager.heldBuckets().find((b) => b.contains(r))?.lease).toBe(
        owner.manager.leaseFor(r),
      );
    }
    // Memberships live apart from a resource fleet's, with the count in their names.
    const members = await rig.store.list({ prefix: 'leasehold/bucket-members/default/' });
    expect(members.filter((m) => m.owner !== '').map((m) => m.resource)).toEqual(
      expect.arrayContaining([expect.stringMatching(/@[0-9a-f]{8}#b=64$/)]),
    );
    expect(await rig.store.list({ prefix: 'leasehold/members/' })).toEqual([]);
    // The dashboard counts bucket leases as work and shows the members as the bucketed group.
    const view = fleetView(await rig.store.list({}), rig.clock.now(), 0);
    expect(view.leases).toBe(64);
    expect(view.members.map((m) => [m.id, m.group, m.leases, m.fairShare])).toEqual(
      ws.map((w) => [w.id, 'default (buckets)', 16, 16]),
    );
  });

  it("a resource's token rises whenever its bucket changes hands: a leave, then a crash", async () => {
    rig = new Rig();
    const ws = [await rig.join(), await rig.join(), await rig.join()];
    await rig.clock.advance(3 * TTL);
    const tokens = (): Map<string, number> => {
      const out = new Map<string, number>();
      for (const r of resources)
        for (const w of rig!.workers) {
          const lease = w.manager.leaseFor(r);
          if (lease?.isValid()) out.set(r, lease.token);
        }
      return out;
    };
    const before = tokens();
    expect(before.size).toBe(resources.length);
    const leaving = new Set(resources.filter((r) => ws[0]!.manager.leaseFor(r)));
    await ws[0]!.manager.stop();
    await rig.clock.advance(3 * TTL);
    const afterLeave = tokens();
    expect(afterLeave.size).toBe(resources.length);
    for (const r of resources)
      if (leaving.has(r)) expect(afterLeave.get(r)!).toBeGreaterThan(before.get(r)!);
      else expect(afterLeave.get(r)).toBe(before.get(r));
    const crashed = new Set(resources.filter((r) => ws[1]!.manager.leaseFor(r)));
    ws[1]!.link.mode = 'hang';
    await rig.clock.advance(4 * TTL);
    const afterCrash = tokens();
    for (const r of crashed) {
      expect(ws[2]!.manager.leaseFor(r)?.isValid()).toBe(true);
      expect(afterCrash.get(r)!).toBeGreaterThan(afterLeave.get(r)!);
    }
    expect(ws[2]!.manager.heldBuckets()).toHaveLength(64);
  });

  it('balances buckets by weight', async () => {
    rig = new Rig();
    // Bucket 0 weighs as much as the other 63 together.
    const weight = (b: number): number => (b === 0 ? 63 : 1);
    const a = await rig.join({ weight });
    const b = await rig.join({ weight });
    await rig.clock.advance(6 * TTL);
    const loads = [a, b].map((w) =>
      w.manager.heldBuckets().reduce((sum, x) => sum + weight(x.index), 0),
    );
    expect(loads.reduce((x, y) => x + y)).toBe(126);
    expect(Math.max(...loads)).toBeLessThanOrEqual(63 * 1.1);
    const holder = [a, b].find((w) => w.manager.heldBuckets().some((x) => x.index === 0))!;
    expect(holder.manager.reportLoad(0, 5)).toBe(true);
    expect(() => holder.manager.reportLoad(64, 1)).toThrow(
      /bucket must be an integer from 0 to 63/,
    );
  });

  it('refuses to start beside live workers of another bucket count, and they keep their buckets', async () => {
    rig = new Rig();
    // A live member that holds nothing yet (so no bucket record of its count exists), then one that does.
    const idle = await rig.join({ maxLeases: 0 });
    const early = rig.make({ buckets: 32 });
    await expect(early.manager.start()).rejects.toThrow(
      /buckets is 32 here, but live worker "w1" of this group uses 64/,
    );
    await idle.manager.stop();
    const a = await rig.join();
    await rig.clock.advance(2 * TTL);
    let handoffs = 0;
    a.manager.on('handoff', () => handoffs++);
    const odd = rig.make({ buckets: 32 });
    const error = await odd.manager.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LeaseError);
    expect((error as LeaseError).code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect((error as LeaseError).message).toMatch(/buckets is 32.*64 buckets/);
    expect(odd.manager.held()).toEqual([]);
    // A member of the other count that stays (its membership record, as a worker between its
    // join and its refusal leaves it): the running worker gives it no share, so hands nothing over.
    await rig.store.tryAcquire('leasehold/bucket-members/default/@0badc0de#b=32', 'ghost', 60_000);
    await rig.clock.advance(2 * TTL);
    expect(a.manager.heldBuckets()).toHaveLength(64);
    expect(handoffs).toBe(0);
    expect(odd.link.calls.acquireMany).toBe(0);
  });

  it('refuses a group whose records were written with another count, even with nobody live', async () => {
    rig = new Rig();
    const a = await rig.join();
    await rig.clock.advance(2 * TTL);
    await a.manager.stop();
    const odd = rig.make({ buckets: 128 });
    await expect(odd.manager.start()).rejects.toThrow(
      /buckets is 128, but group "default" has records of 64 buckets/,
    );
    expect(odd.link.calls.tryAcquire + odd.link.calls.acquireMany).toBe(0);
    // Another group starts afresh.
    const fresh = await rig.join({ buckets: 128, group: 'orders-v2' });
    await rig.clock.advance(2 * TTL);
    expect(fresh.manager.heldBuckets()).toHaveLength(128);
  });

  it('two workers of different counts starting at once: never a resource covered twice', async () => {
    for (let round = 0; round < 5; round++) {
      rig = new Rig();
      const x = rig.make({ buckets: 64, group: `g${round}` });
      const y = rig.make({ buckets: 16, group: `g${round}` });
      const started = await Promise.allSettled([x.manager.start(), y.manager.start()]);
      expect(started.some((s) => s.status === 'rejected')).toBe(true);
      for (let t = 0; t < 10; t++) {
        await rig.clock.advance(200);
        for (const [r, holders] of rig.coverage()) expect(holders.length, r).toBeLessThanOrEqual(1);
      }
      await rig.stopAll();
    }
    rig = undefined;
  });
});

type Step =
  | { kind: 'join' }
  | { kind: 'crash'; who: number }
  | { kind: 'stop'; who: number }
  | { kind: 'advance'; ms: number };

it('a bucketed fleet under random joins, crashes and stops never covers a resource twice, and tokens only rise', async () => {
  const step: fc.Arbitrary<Step> = fc.oneof(
    { arbitrary: fc.constant({ kind: 'join' as const }), weight: 3 },
    { arbitrary: fc.record({ kind: fc.constant('crash' as const), who: fc.nat() }), weight: 1 },
    { arbitrary: fc.record({ kind: fc.constant('stop' as const), who: fc.nat() }), weight: 1 },
    {
      arbitrary: fc.record({
        kind: fc.constant('advance' as const),
        ms: fc.integer({ min: 10, max: 1500 }),
      }),
      weight: 4,
    },
  );
  const sample = resources.slice(0, 300);
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 3, maxLength: 12 }), async (steps) => {
      const local = new Rig();
      const gone = new Set<Worker>();
      const last = new Map<string, number>();
      const check = (): void => {
        for (const r of sample) {
          const covering = local.workers
            .map((w) => w.manager.leaseFor(r))
            .filter((l) => l?.isValid());
          if (covering.length > 1) throw new Error(`${r} covered ${covering.length} times`);
          const token = covering[0]?.token;
          if (token !== undefined) {
            if (token < (last.get(r) ?? 0)) throw new Error(`${r}'s token went back`);
            last.set(r, token);
          }
        }
      };
      try {
        for (const s of [{ kind: 'join' as const }, ...steps]) {
          const live = local.workers.filter((w) => w.link.mode === 'pass' && !gone.has(w));
          if (s.kind === 'join') await local.join({ buckets: 16 });
          else if (s.kind === 'advance')
            for (let left = s.ms; left > 0; left -= 50) {
              await local.clock.advance(Math.min(50, left));
              check();
            }
          else if (live.length > 0) {
            const w = live[s.who % live.length]!;
            gone.add(w);
            if (s.kind === 'crash') w.link.mode = 'hang';
            else await w.manager.stop({ timeoutMs: 100 });
          }
          check();
        }
        // Quiet: every bucket held by a live worker.
        await local.clock.advance(4 * TTL);
        if (local.workers.some((w) => !gone.has(w))) {
          const held = local.workers.reduce(
            (n, w) => n + w.manager.heldBuckets().filter((b) => b.lease.isValid()).length,
            0,
          );
          expect(held).toBe(16);
        }
      } finally {
        await local.stopAll();
      }
    }),
    { numRuns: 25 },
  );
});
