import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryStore, SqliteStore, type Lease, type LeaseStore } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';

/** The transitions table of the design, written as plainly as possible: the model stores are checked against. */
class ModelStore {
  private readonly records = new Map<string, { owner: string; token: number; expiresAt: number }>();
  constructor(
    private readonly clock: ManualClock,
    private readonly skew: number,
  ) {}

  acquire(resource: string, owner: string, ttlMs: number): Lease | null {
    const now = this.clock.now();
    const r = this.records.get(resource);
    const free = !r || r.owner === '' || now > r.expiresAt + this.skew;
    if (!free) return null;
    const next = { owner, token: (r?.token ?? 0) + 1, expiresAt: now + ttlMs };
    this.records.set(resource, next);
    return { resource, ...next, ttlMs };
  }

  renew(lease: Lease, ttlMs: number): Lease | null {
    const r = this.records.get(lease.resource);
    if (!r || r.owner !== lease.owner || r.token !== lease.token) return null;
    r.expiresAt = this.clock.now() + ttlMs;
    return {
      resource: lease.resource,
      owner: r.owner,
      token: r.token,
      expiresAt: r.expiresAt,
      ttlMs,
    };
  }

  release(lease: Lease): boolean {
    const r = this.records.get(lease.resource);
    if (!r || r.owner !== lease.owner || r.token !== lease.token) return false;
    r.owner = '';
    r.expiresAt = 0;
    return true;
  }

  list() {
    return [...this.records.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([resource, r]) => ({ resource, ...r }));
  }
}

type Op =
  | { op: 'acquire'; resource: string; owner: string; ttl: number }
  | { op: 'renew'; pick: number; ttl: number; forge: boolean }
  | { op: 'release'; pick: number; forge: boolean }
  | { op: 'renewMany'; picks: number[] }
  | { op: 'releaseMany'; picks: number[] }
  | { op: 'advance'; ms: number }
  | { op: 'edge'; pick: number; delta: number };

const resource = fc.constantFrom('a', 'b%');
const owner = fc.constantFrom('x', 'y', 'z');
const ttl = fc.constantFrom(100, 250, 1000);
const ops = fc.array(
  fc.oneof(
    {
      arbitrary: fc.record({ op: fc.constant('acquire' as const), resource, owner, ttl }),
      weight: 4,
    },
    fc.record({ op: fc.constant('renew' as const), pick: fc.nat(), ttl, forge: fc.boolean() }),
    fc.record({ op: fc.constant('release' as const), pick: fc.nat(), forge: fc.boolean() }),
    fc.record({
      op: fc.constant('renewMany' as const),
      picks: fc.array(fc.nat(), { maxLength: 5 }),
    }),
    fc.record({
      op: fc.constant('releaseMany' as const),
      picks: fc.array(fc.nat(), { maxLength: 5 }),
    }),
    // Jump to just around the expiry of a granted lease (± the skew allowance): the edges where
    // off-by-one mistakes in "expired" live.
    {
      arbitrary: fc.record({
        op: fc.constant('edge' as const),
        pick: fc.nat(),
        delta: fc.constantFrom(-1, 0, 1, 19, 20, 21),
      }),
      weight: 3,
    },
    fc.record({
      op: fc.constant('advance' as const),
      // Steps that land on the edges of a TTL and of the skew allowance, where off-by-one bugs live.
      ms: fc.oneof(
        fc.integer({ min: 0, max: 1100 }),
        fc.constantFrom(
          1,
          20,
          21,
          99,
          100,
          101,
          110,
          119,
          120,
          121,
          249,
          250,
          251,
          269,
          270,
          271,
          1000,
          1020,
          1021,
        ),
      ),
    }),
  ),
  { minLength: 5, maxLength: 60, size: 'medium' },
);

const stores: [string, (clock: ManualClock) => Promise<LeaseStore>][] = [
  ['memory', async (clock) => new MemoryStore({ clock, maxClockSkewMs: 20 })],
  ['sqlite', (clock) => SqliteStore.open(':memory:', { clock, maxClockSkewMs: 20 })],
];

describe.each(stores)('%s store against the model', (_name, make) => {
  it('agrees on every transition of random histories', async () => {
    await fc.assert(
      fc.asyncProperty(ops, async (history: Op[]) => {
        const clock = new ManualClock();
        const store = await make(clock);
        const model = new ModelStore(clock, 20);
        const granted: Lease[] = [];
        const pick = (i: number, forge = false): Lease | undefined => {
          const lease = granted[i % Math.max(1, granted.length)];
          return lease && forge ? { ...lease, owner: lease.owner === 'x' ? 'y' : 'x' } : lease;
        };
        try {
          for (const step of history) {
            if (step.op === 'acquire') {
              const got = await store.tryAcquire(step.resource, step.owner, step.ttl);
              expect(got).toEqual(model.acquire(step.resource, step.owner, step.ttl));
              if (got) granted.push(got);
            } else if (step.op === 'renew') {
              const lease = pick(step.pick, step.forge);
              if (lease)
                expect(await store.renew(lease, step.ttl)).toEqual(model.renew(lease, step.ttl));
            } else if (step.op === 'release') {
              const lease = pick(step.pick, step.forge);
              if (lease) expect(await store.release(lease)).toBe(model.release(lease));
            } else if (step.op === 'renewMany') {
              const leases = step.picks.map((i) => pick(i)).filter((l): l is Lease => !!l);
              expect(await store.renewMany(leases)).toEqual(
                leases.map((l) => model.renew(l, l.ttlMs)),
              );
            } else if (step.op === 'releaseMany') {
              const leases = step.picks.map((i) => pick(i)).filter((l): l is Lease => !!l);
              expect(await store.releaseMany(leases)).toEqual(leases.map((l) => model.release(l)));
            } else if (step.op === 'edge') {
              const lease = pick(step.pick);
              const ms = lease ? lease.expiresAt + step.delta - clock.now() : 0;
              if (ms > 0) await clock.advance(ms);
            } else {
              await clock.advance(step.ms);
            }
          }
          expect(await store.list()).toEqual(model.list());
        } finally {
          await store.close();
        }
      }),
      {
        numRuns: 300,
        examples: [
          [
            [
              { op: 'acquire', resource: 'a', owner: 'x', ttl: 100 },
              { op: 'advance', ms: 119 },
              { op: 'acquire', resource: 'a', owner: 'y', ttl: 100 },
            ],
          ],
        ],
      },
    );
  });
});
