import fc from 'fast-check';
import { expect, it } from 'vitest';
import { Fleet, names, type Worker } from '../fleet/fleet-rig.js';

const TTL = 1000;
const HB = 250;
const RECONCILE = 500;

type Step =
  | { kind: 'join' }
  | { kind: 'crash'; who: number }
  | { kind: 'pause'; who: number; ms: number }
  | { kind: 'stop'; who: number }
  | { kind: 'want'; count: number }
  | { kind: 'advance'; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'join' as const }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('crash' as const), who: fc.nat() }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('pause' as const),
      who: fc.nat(),
      ms: fc.integer({ min: 100, max: 2500 }),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant('stop' as const), who: fc.nat() }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('want' as const),
      count: fc.integer({ min: 0, max: 30 }),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.integer({ min: 10, max: 1500 }),
    }),
    weight: 4,
  },
);

/** Advances in small steps, checking after each that no resource has two valid holders. */
async function advanceChecking(fleet: Fleet, ms: number): Promise<void> {
  for (let left = ms; left > 0; left -= 50) {
    await fleet.clock.advance(Math.min(50, left));
    for (const [resource, holders] of fleet.holders()) {
      if (holders.length > 1)
        throw new Error(
          `${resource} held by ${holders.join(' and ')} at ${fleet.clock.monotonic()}`,
        );
    }
  }
}

it('a fleet under random joins, crashes, pauses, stops and wanted-set changes never double-owns, and settles', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 3, maxLength: 14 }), async (steps) => {
      let wanted = names(12);
      const fleet = new Fleet({
        resources: () => wanted,
        ttlMs: TTL,
        heartbeatMs: HB,
        reconcileMs: RECONCILE,
      });
      const stopped = new Set<Worker>();
      const crashed = new Set<Worker>();
      const pick = (i: number): Worker | undefined =>
        fleet.workers[i % Math.max(1, fleet.workers.length)];
      try {
        await fleet.join();
        for (const s of steps) {
          if (s.kind === 'join') await fleet.join();
          else if (s.kind === 'want') wanted = names(s.count);
          else if (s.kind === 'advance') await advanceChecking(fleet, s.ms);
          else {
            const w = pick(s.who);
            if (!w || stopped.has(w) || crashed.has(w)) continue;
            if (s.kind === 'crash') {
              w.link.mode = 'hang';
              crashed.add(w);
            } else if (s.kind === 'stop') {
              stopped.add(w);
              await w.manager.stop({ timeoutMs: 100 });
            } else {
              w.link.mode = 'hang';
              await advanceChecking(fleet, s.ms);
              w.link.mode = 'pass';
              w.link.resumeHung(); // the replies held up in the pause arrive late
            }
          }
        }
        // Quiescence: no more faults; the survivors must own everything, evenly.
        await advanceChecking(fleet, 12 * TTL);
        const live = fleet.workers.filter((w) => !stopped.has(w) && !crashed.has(w));
        if (live.length === 0) return;
        const owned = new Map<string, number>();
        for (const w of live)
          for (const lease of w.manager.held())
            owned.set(lease.resource, (owned.get(lease.resource) ?? 0) + 1);
        expect([...owned.keys()].sort()).toEqual([...wanted].sort());
        expect([...owned.values()].every((n) => n === 1)).toBe(true);
        const counts = live.map((w) => w.manager.held().length);
        expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
      } finally {
        for (const w of crashed) w.link.mode = 'hang';
        await fleet.stopAll().catch(() => undefined);
      }
    }),
    { numRuns: 25 },
  );
}, 120_000);

it('after quiescence a join moves at most ⌈W/(N+1)⌉ + N leases, all within shares, and limits are respected', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: 0, max: 80 }),
      fc.array(fc.option(fc.integer({ min: 0, max: 15 }), { nil: undefined }), {
        minLength: 7,
        maxLength: 7,
      }),
      async (n, w, limits) => {
        const wanted = names(w);
        const fleet = new Fleet({
          resources: wanted,
          ttlMs: TTL,
          heartbeatMs: HB,
          reconcileMs: RECONCILE,
        });
        try {
          for (let i = 0; i < n; i++) await fleet.join({ maxLeases: limits[i] ?? Infinity });
          await advanceChecking(fleet, 8 * TTL);
          let moves = 0;
          for (const worker of fleet.workers) worker.manager.on('handoff', () => moves++);
          const newcomer = await fleet.join({ maxLeases: limits[n] ?? Infinity });
          newcomer.manager.on('handoff', () => moves++);
          await advanceChecking(fleet, 8 * TTL);
          const all = fleet.workers;
          const capacity = all.reduce((sum, _, i) => sum + (limits[i] ?? Infinity), 0);
          const owned = all.flatMap((x) => x.manager.held().map((l) => l.resource));
          expect(new Set(owned).size).toBe(owned.length);
          expect(owned.length).toBe(Math.min(w, capacity));
          all.forEach((x, i) =>
            expect(x.manager.held().length).toBeLessThanOrEqual(limits[i] ?? Infinity),
          );
          if (limits.slice(0, n + 1).every((l) => l === undefined)) {
            const counts = fleet.counts(all);
            expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
            expect(moves).toBeLessThanOrEqual(Math.ceil(w / (n + 1)) + n);
          }
        } finally {
          await fleet.stopAll().catch(() => undefined);
        }
      },
    ),
    { numRuns: 30 },
  );
}, 120_000);
