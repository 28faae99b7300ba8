import { describe, expect, it } from 'vitest';
import { ReconcileLoop } from '../../src/fleet/reconcile-loop.js';
import { ManualClock } from '../../src/testing/index.js';

const TTL = 10_000;
const BEAT = 1_000;

interface Rig {
  clock: ManualClock;
  loop: ReconcileLoop;
  /** When each pass began, on the monotonic clock. */
  began: number[];
  failures: unknown[];
  passed: () => number;
  /** What the next passes do: resolve to a delay, or throw. */
  script: (() => number)[];
  /** Holds the next pass open until `finish()` is called. */
  hold: () => { finish: () => void };
  stop: () => void;
}

function rig(reconcileMs = 5_000): Rig {
  const clock = new ManualClock();
  const began: number[] = [];
  const failures: unknown[] = [];
  const script: (() => number)[] = [];
  let passes = 0;
  let stopped = false;
  let gate: Promise<void> | undefined;
  const loop = new ReconcileLoop({
    clock,
    reconcileMs,
    ttlMs: TTL,
    heartbeatMs: BEAT,
    pass: async () => {
      began.push(clock.monotonic());
      if (gate) await gate;
      const step = script.shift();
      return step ? step() : 60_000;
    },
    passed: () => void passes++,
    failed: (error) => void failures.push(error),
    stopping: () => stopped,
  });
  return {
    clock,
    loop,
    began,
    failures,
    script,
    passed: () => passes,
    hold: () => {
      let finish!: () => void;
      gate = new Promise<void>((resolve) => (finish = resolve));
      return {
        finish: () => {
          gate = undefined;
          finish();
        },
      };
    },
    stop: () => (stopped = true),
  };
}

describe('ReconcileLoop', () => {
  it('runs nothing before start, then each pass at the delay the one before asked for', async () => {
    const { clock, loop, began, script, passed } = rig();
    loop.request();
    await clock.advance(10_000);
    expect(began).toEqual([]);
    script.push(
      () => 300,
      () => 1_000,
    );
    await loop.start();
    expect(began).toEqual([10_000]);
    expect(passed()).toBe(1);
    await clock.advance(1_300);
    expect(began).toEqual([10_000, 10_300, 11_300]);
  });

  it('runs one pass at a time: a pass asked for while one runs follows it at once', async () => {
    const { clock, loop, began, script, hold } = rig();
    script.push(() => 5_000);
    await loop.start();
    const gate = hold();
    await clock.advance(5_000);
    expect(loop.running).toBe(true);
    loop.request();
    loop.request();
    expect(began).toEqual([0, 5_000]);
    gate.finish();
    await clock.advance(0);
    expect(began).toEqual([0, 5_000, 5_000]); // one more, not two
    expect(loop.running).toBe(false);
    loop.request();
    await clock.advance(0);
    expect(began).toHaveLength(4); // nothing running: at once
  });

  it('backs off after failed passes, from a heartbeat doubling, and reports each failure', async () => {
    const { clock, loop, began, failures, script, passed } = rig(60_000);
    const boom = (): number => {
      throw new Error('store down');
    };
    script.push(boom, boom, boom, () => 60_000);
    await loop.start();
    expect(failures).toHaveLength(1);
    const gaps: number[] = [];
    for (let i = 0; i < 3; i++) {
      const before = began.length;
      while (began.length === before) await clock.advance(10);
      gaps.push(began.at(-1)! - began.at(-2)!);
    }
    expect(failures).toHaveLength(3);
    expect(passed()).toBe(1);
    // The first retry after about a heartbeat (±25 %), the second after about two.
    expect(gaps[0]).toBeGreaterThanOrEqual(0.75 * BEAT - 10);
    expect(gaps[0]).toBeLessThanOrEqual(1.25 * BEAT + 10);
    expect(gaps[1]).toBeGreaterThanOrEqual(1.5 * BEAT - 10);
    expect(gaps[1]).toBeLessThanOrEqual(2.5 * BEAT + 10);
    expect(gaps[2]).toBeGreaterThanOrEqual(3 * BEAT - 10);
  });

  it('schedules nothing once stopping, and cancel() drops the scheduled pass', async () => {
    const { clock, loop, began, script, stop } = rig();
    script.push(() => 1_000);
    await loop.start();
    loop.cancel();
    await clock.advance(5_000);
    expect(began).toEqual([0]);
    loop.request();
    await clock.advance(0);
    expect(began).toEqual([0, 5_000]);
    stop();
    loop.request();
    await clock.advance(120_000);
    expect(began).toEqual([0, 5_000]);
  });

  it('keeps the scan period within what a healthy holder renews: at most ttl − 1.25 heartbeats', () => {
    expect(rig(5_000).loop.scanMs).toBe(5_000);
    expect(rig(60_000).loop.scanMs).toBe(TTL - 1.25 * BEAT);
    const { loop } = rig(5_000);
    for (let i = 0; i < 50; i++) {
      const next = loop.nextInterval();
      expect(next).toBeGreaterThanOrEqual(4_000);
      expect(next).toBeLessThanOrEqual(6_000);
    }
    expect(rig(60_000).loop.nextInterval()).toBe(TTL - 1.25 * BEAT);
  });
});
