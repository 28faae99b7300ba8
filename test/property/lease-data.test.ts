import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCode, LeaseClient, MemoryStore, type HeldLease } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';

const TTL = 1000;
const BEAT = 250;

type Step =
  | { kind: 'take'; who: number }
  | { kind: 'write'; who: number }
  | { kind: 'release'; who: number; withData: boolean }
  | { kind: 'advance'; ms: number }
  | { kind: 'freeze'; ms: number };

const step = (clients: number): fc.Arbitrary<Step> =>
  fc.oneof(
    fc.record({ kind: fc.constant('take' as const), who: fc.nat(clients - 1) }),
    fc.record({ kind: fc.constant('write' as const), who: fc.nat(clients - 1) }),
    fc.record({
      kind: fc.constant('release' as const),
      who: fc.nat(clients - 1),
      withData: fc.boolean(),
    }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 600 }) }),
    // The event loop frozen past a deadline: time passes with no timer run.
    fc.record({ kind: fc.constant('freeze' as const), ms: fc.integer({ min: 1, max: 1500 }) }),
  );

describe('lease data against the model (memory store, manual clock)', () => {
  it('every grant reads the last value that landed before it; no write under an older token lands after a newer grant', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step(4), { minLength: 1, maxLength: 50 }), async (steps) => {
        const clock = new ManualClock();
        const store = new MemoryStore({ clock });
        const clients = Array.from(
          { length: 4 },
          (_, i) =>
            new LeaseClient({ store, owner: `c${i}`, ttlMs: TTL, heartbeatMs: BEAT, clock }),
        );
        // The model: the value that landed last, and the highest token granted so far.
        let landed: string | null = null;
        let highest = 0;
        let n = 0;
        const latest = new Map<number, HeldLease>();
        try {
          for (const s of steps) {
            if (s.kind === 'take') {
              if (latest.get(s.who)?.isValid()) continue;
              const lease = await clients[s.who]!.tryAcquire('job').catch(() => null);
              if (!lease) continue;
              expect(lease.token).toBeGreaterThan(highest);
              highest = lease.token;
              expect(lease.data).toBe(landed);
              latest.set(s.who, lease);
            } else if (s.kind === 'write' || s.kind === 'release') {
              const lease = latest.get(s.who);
              if (!lease) continue;
              const value = `${lease.owner}#${lease.token}:${++n}`;
              const valid = lease.isValid();
              try {
                if (s.kind === 'write') await lease.writeData(value);
                else if (s.withData) await lease.release({ data: value });
                else {
                  await lease.release();
                  continue;
                }
                // It landed: only under the newest grant, and only while the holder was valid.
                expect(valid).toBe(true);
                expect(lease.token).toBe(highest);
                landed = value;
              } catch (error) {
                // Lost (taken over, or past its deadline), or already given up by its holder.
                expect([ErrorCode.LEASE_LOST, ErrorCode.LEASE_RELEASED]).toContain(
                  (error as { code?: string }).code,
                );
                expect(lease.isValid()).toBe(false);
              }
            } else if (s.kind === 'advance') await clock.advance(s.ms);
            else clock.jump(s.ms);
          }
          // The record holds exactly the last value that landed.
          expect((await store.get('job'))?.data ?? null).toBe(landed);
        } finally {
          await Promise.allSettled(clients.map((c) => c.close()));
        }
      }),
      { numRuns: 300 },
    );
  });
});
