import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { elect, MemoryStore, type Election } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { FaultyStore } from '../harness/faulty-store.js';

const TTL = 1000;
const BEAT = 250;
const HOLD_OFF = 600;

type Step =
  | { kind: 'start'; who: number }
  | { kind: 'stop'; who: number }
  | { kind: 'crash'; who: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'freeze'; ms: number };

const CANDIDATES = 4;
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('start' as const), who: fc.nat(CANDIDATES - 1) }),
  },
  fc.record({ kind: fc.constant('stop' as const), who: fc.nat(CANDIDATES - 1) }),
  fc.record({ kind: fc.constant('crash' as const), who: fc.nat(CANDIDATES - 1) }),
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.integer({ min: 25, max: 1500 }),
    }),
  },
  // The event loop frozen: time passes with no timer run.
  fc.record({ kind: fc.constant('freeze' as const), ms: fc.integer({ min: 1, max: 1500 }) }),
);

interface Running {
  readonly election: Election;
  readonly link: FaultyStore;
  readonly priority: number;
  crashed: boolean;
}

describe('leader priority against the model (memory store, manual clock)', () => {
  it('never two leaders at once; once quiet, the leader is a running candidate of the highest priority', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: CANDIDATES, maxLength: CANDIDATES }),
        fc.array(step, { minLength: 1, maxLength: 25 }),
        async (priorities, steps) => {
          const clock = new ManualClock();
          const store = new MemoryStore({ clock });
          const slots: (Running | undefined)[] = Array.from(
            { length: CANDIDATES },
            () => undefined,
          );
          const everyone: Running[] = [];
          let generation = 0;
          const leaders = (): number => everyone.filter((r) => r.election.isLeader()).length;
          const advance = async (ms: number): Promise<void> => {
            for (let t = 0; t < ms; t += 25) {
              await clock.advance(25);
              expect(leaders()).toBeLessThanOrEqual(1);
            }
          };
          try {
            for (const s of steps) {
              if (s.kind === 'start' && !slots[s.who]) {
                const link = new FaultyStore(store);
                const running: Running = {
                  link,
                  priority: priorities[s.who]!,
                  crashed: false,
                  election: elect({
                    store: link,
                    name: 'prop',
                    owner: `c${s.who}-${++generation}`,
                    ttlMs: TTL,
                    heartbeatMs: BEAT,
                    clock,
                    priority: priorities[s.who]!,
                    holdOffMs: HOLD_OFF,
                    onElected: () => {},
                    onError: () => {},
                  }),
                };
                slots[s.who] = running;
                everyone.push(running);
              } else if (s.kind === 'stop' && slots[s.who] && !slots[s.who]!.crashed) {
                await slots[s.who]!.election.stop();
                slots[s.who] = undefined;
              } else if (s.kind === 'crash' && slots[s.who]) {
                // Its calls stop arriving; its slot may start a new candidate later.
                slots[s.who]!.link.mode = 'hang';
                slots[s.who]!.crashed = true;
                slots[s.who] = undefined;
              } else if (s.kind === 'advance') {
                await advance(s.ms);
              } else if (s.kind === 'freeze') {
                clock.jump(s.ms);
                expect(leaders()).toBeLessThanOrEqual(1);
              }
            }
            // Quiet: no more faults, long enough for lapses, hold-offs and handoffs.
            await advance(HOLD_OFF + 6 * TTL);
            const live = slots.filter((r): r is Running => r !== undefined);
            const leader = everyone.filter((r) => r.election.isLeader());
            if (live.length === 0) {
              expect(leader).toHaveLength(0);
            } else {
              expect(leader).toHaveLength(1);
              expect(live).toContain(leader[0]);
              expect(leader[0]!.priority).toBe(Math.max(...live.map((r) => r.priority)));
            }
          } finally {
            for (const r of everyone) {
              r.link.mode = 'pass';
              r.link.resumeHung();
            }
            await Promise.all(everyone.map((r) => r.election.stop()));
          }
        },
      ),
      { numRuns: 60 },
    );
  }, 60_000);
});
