import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/core/time.js';
import type { Wake } from '../../src/client/release-wake.js';
import { waitForGrant, type NotGranted } from '../../src/client/wait-loop.js';
import { ManualClock } from '../../src/testing/index.js';

/** A wake that sleeps on the clock and records each sleep's length. */
function sleeper(slept: number[]): Wake {
  return {
    sleep: (clock: Clock, ms: number) => {
      slept.push(ms);
      return new Promise((resolve) => clock.setTimeout(resolve, ms));
    },
    close: () => {},
  };
}

/** Runs the loop while advancing the manual clock until it settles. */
async function drive<T>(clock: ManualClock, run: Promise<T>): Promise<T> {
  let settled = false;
  const done = run.finally(() => (settled = true));
  done.catch(() => {});
  while (!settled) await clock.advance(5);
  return done;
}

/** A grant (an object: the loop tells grants from refusals by type). */
interface Grant {
  readonly name: string;
}
const LEASE: Grant = { name: 'a' };

describe('waitForGrant', () => {
  it('backs off with growing jittered sleeps, capped at a quarter of the TTL, until granted', async () => {
    const clock = new ManualClock();
    const slept: number[] = [];
    let attempts = 0;
    const granted = await drive(
      clock,
      waitForGrant(
        { clock, ttlMs: 400 },
        'lease on "a"',
        'a',
        60_000,
        undefined,
        async (): Promise<Grant | NotGranted> => (++attempts < 8 ? 'held-by-other' : LEASE),
        async () => {},
        () => sleeper(slept),
      ),
    );
    expect(granted).toBe(LEASE);
    expect(attempts).toBe(8);
    const caps = [25, 50, 100, 100, 100, 100, 100];
    slept.forEach((ms, i) => {
      expect(ms).toBeGreaterThanOrEqual(caps[i]! / 2);
      expect(ms).toBeLessThanOrEqual(caps[i]!);
    });
  });

  it('fails with LEASE_UNAVAILABLE naming what and why once waitMs has passed', async () => {
    const clock = new ManualClock();
    const run = waitForGrant(
      { clock, ttlMs: 1000 },
      'lease on "a"',
      'a',
      300,
      undefined,
      async (): Promise<Grant | NotGranted> => 'too-late',
      async () => {},
      () => sleeper([]),
    );
    await expect(drive(clock, run)).rejects.toMatchObject({
      code: 'LEASE_UNAVAILABLE',
      resource: 'a',
      retryable: true,
      message: expect.stringMatching(/^lease on "a" was granted, but .*\(waited 300 ms\)/),
    });
  });

  it('gives back a grant that arrives after the abort, and rejects with the abort reason', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const givenBack: string[] = [];
    const run = waitForGrant(
      { clock, ttlMs: 1000 },
      'lease on "a"',
      'a',
      10_000,
      controller.signal,
      async () => {
        controller.abort(new Error('the caller gave up'));
        return LEASE;
      },
      async (lease) => void givenBack.push(lease.name),
      () => sleeper([]),
    );
    await expect(run).rejects.toThrow('the caller gave up');
    expect(givenBack).toEqual(['a']);
  });

  it('skips the first attempt when waiters of this process are asleep on the name', async () => {
    const clock = new ManualClock();
    let attempts = 0;
    const slept: number[] = [];
    const granted = await drive(
      clock,
      waitForGrant(
        { clock, ttlMs: 1000 },
        'lease on "a"',
        'a',
        10_000,
        undefined,
        async () => (attempts++, LEASE),
        async () => {},
        () => sleeper(slept),
        () => true,
      ),
    );
    expect(granted).toBe(LEASE);
    expect(attempts).toBe(1);
    expect(slept).toHaveLength(1); // it slept before its first attempt
  });
});
