import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LeaseClient, MemoryStore, type HeldGroup, type HeldLease } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';

const TTL = 1000;
const BEAT = 250;

function fleet(count: number) {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock });
  const clients = Array.from(
    { length: count },
    (_, i) => new LeaseClient({ store, owner: `c${i}`, ttlMs: TTL, heartbeatMs: BEAT, clock }),
  );
  return { clock, store, clients };
}

type Step =
  | { kind: 'take'; who: number }
  | { kind: 'drop'; who: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'freeze'; ms: number };

const step = (clients: number): fc.Arbitrary<Step> =>
  fc.oneof(
    fc.record({ kind: fc.constant('take' as const), who: fc.nat(clients - 1) }),
    fc.record({ kind: fc.constant('drop' as const), who: fc.nat(clients - 1) }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 600 }) }),
    // The event loop frozen past a deadline: time passes with no timer run.
    fc.record({ kind: fc.constant('freeze' as const), ms: fc.integer({ min: 1, max: 1500 }) }),
  );

describe('counting leases against the model (memory store, manual clock)', () => {
  it('never more than N valid holders of a name; tokens rise per permit', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(step(6), { minLength: 1, maxLength: 40 }),
        async (permits, steps) => {
          const { clock, clients } = fleet(6);
          const held: HeldLease[] = [];
          const lastToken = new Map<number, number>();
          try {
            for (const s of steps) {
              if (s.kind === 'take') {
                const lease = await clients[s.who]!.tryAcquire('sem', { permits }).catch(
                  () => null,
                );
                if (lease) {
                  expect(lease.permit).toBeLessThan(permits);
                  expect(lease.token).toBeGreaterThan(lastToken.get(lease.permit) ?? 0);
                  lastToken.set(lease.permit, lease.token);
                  held.push(lease);
                }
              } else if (s.kind === 'drop') {
                const mine = held.find((l) => l.owner === `c${s.who}` && l.isValid());
                await mine?.release();
              } else if (s.kind === 'advance') await clock.advance(s.ms);
              else clock.jump(s.ms);
              const valid = held.filter((l) => l.isValid());
              expect(valid.length).toBeLessThanOrEqual(permits);
              expect(new Set(valid.map((l) => l.permit)).size).toBe(valid.length);
            }
          } finally {
            await Promise.all(clients.map((c) => c.close()));
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('all-or-nothing groups against the model', () => {
  const NAMES = ['a', 'b', 'c', 'd'];
  it('a group is held whole or not at all, and no resource has two valid holders', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({
              kind: fc.constant('group' as const),
              who: fc.nat(3),
              set: fc
                .subarray(NAMES, { minLength: 1 })
                .chain((s) => fc.shuffledSubarray(s, { minLength: s.length })),
            }),
            fc.record({
              kind: fc.constant('single' as const),
              who: fc.nat(3),
              name: fc.constantFrom(...NAMES),
            }),
            fc.record({ kind: fc.constant('drop' as const), pick: fc.nat(20) }),
            fc.record({
              kind: fc.constant('advance' as const),
              ms: fc.integer({ min: 1, max: 700 }),
            }),
            fc.record({
              kind: fc.constant('freeze' as const),
              ms: fc.integer({ min: 1, max: 1500 }),
            }),
          ),
          { minLength: 1, maxLength: 40 },
        ),
        async (steps) => {
          const { clock, clients } = fleet(4);
          const groups: HeldGroup[] = [];
          const singles: HeldLease[] = [];
          try {
            for (const s of steps) {
              if (s.kind === 'group') {
                const client = clients[s.who]!;
                const before = client.size;
                const group = await client.tryAcquireAll(s.set).catch(() => null);
                if (group) {
                  expect(group.resources).toEqual(s.set);
                  groups.push(group);
                } else expect(client.size).toBe(before); // nothing of a refused group is kept
              } else if (s.kind === 'single') {
                const lease = await clients[s.who]!.tryAcquire(s.name).catch(() => null);
                if (lease) singles.push(lease);
              } else if (s.kind === 'drop') {
                await groups[s.pick % Math.max(1, groups.length)]?.release();
              } else if (s.kind === 'advance') await clock.advance(s.ms);
              else clock.jump(s.ms);
              const holders = new Map<string, number>();
              const count = (lease: HeldLease): void => {
                if (lease.isValid())
                  holders.set(lease.resource, (holders.get(lease.resource) ?? 0) + 1);
              };
              for (const g of groups) g.leases.forEach(count);
              singles.forEach(count);
              for (const [name, n] of holders) expect([name, n]).toEqual([name, 1]);
              for (const g of groups) {
                // A group that still counts as valid has every member valid; a broken one has its signal aborted.
                if (g.isValid()) expect(g.leases.every((l) => l.isValid())).toBe(true);
                if (g.leases.some((l) => l.state === 'lost' || l.state === 'released'))
                  expect(g.signal.aborted).toBe(true);
              }
            }
          } finally {
            await Promise.all(clients.map((c) => c.close()));
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('fair waiting against the model', () => {
  it('fair waiters are granted in arrival order; a waiter that stops leaves the line', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 5 }),
        fc.integer({ min: 1, max: 2 }),
        fc.option(fc.nat(4), { nil: undefined }),
        async (count, permits, quitter) => {
          const { clock, clients } = fleet(count + 1);
          const [holderClient, ...waiters] = clients;
          const holders = await Promise.all(
            Array.from({ length: permits }, () => holderClient!.tryAcquire('hot', { permits })),
          );
          const order: string[] = [];
          const controllers = waiters.map(() => new AbortController());
          const done: Promise<void>[] = [];
          try {
            // Each arrival is in line before the next starts (tickets are taken in this order).
            for (const [i, client] of waiters.entries()) {
              done.push(
                client
                  .acquire('hot', { fair: true, permits, signal: controllers[i]!.signal })
                  .then(async (lease) => {
                    order.push(client.owner);
                    await clock.advance(5);
                    await lease.release();
                  })
                  .catch((e: unknown) => {
                    if (!controllers[i]!.signal.aborted) throw e;
                  }),
              );
              await clock.advance(20);
            }
            const stopped = quitter !== undefined && quitter < waiters.length ? quitter : -1;
            if (stopped >= 0) controllers[stopped]!.abort(new Error('stopped'));
            for (const lease of holders) await lease!.release();
            for (let i = 0; i < 400 && order.length < waiters.length - (stopped >= 0 ? 1 : 0); i++)
              await clock.advance(50);
            const expected = waiters.map((c) => c.owner).filter((_, i) => i !== stopped);
            expect(order).toEqual(expected);
            await Promise.all(done);
          } finally {
            controllers.forEach((c) => c.abort(new Error('end')));
            await Promise.all(clients.map((c) => c.close()));
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
