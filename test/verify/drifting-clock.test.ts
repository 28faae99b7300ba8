import { describe, expect, it } from 'vitest';
import { driftIsBeyond, parseDriftRate } from '../../src/cli/verify/drift.js';
import { driftingClock, type TimeSources } from '../../src/cli/harness/drifting-clock.js';
import { hostNow, workerClock } from '../../src/cli/harness/host-clock.js';

/** Time sources that move only when told, recording the timers asked for. */
function fakeTime(host: number, wall: number) {
  const timers: number[] = [];
  const sources: TimeSources = {
    host: () => host,
    wall: () => wall,
    setTimeout: (_fn, ms) => {
      timers.push(ms);
      return { clear: () => undefined };
    },
  };
  return {
    sources,
    timers,
    advance(ms: number) {
      host += ms;
      wall += ms;
    },
  };
}

describe('the drifting clock of the verify drift fault', () => {
  it('starts at the real times and runs both clocks at 1 + rate; its timers and deadlines go back to real time', () => {
    const time = fakeTime(5_000, 1_700_000_000_000);
    const clock = driftingClock({ rate: -0.2, skewMs: 7 }, time.sources);
    expect(clock.monotonic()).toBe(5_000);
    expect(clock.now()).toBe(1_700_000_000_007);
    time.advance(1_000);
    expect(clock.monotonic()).toBe(5_800);
    expect(clock.now()).toBe(1_700_000_000_807);
    // A deadline read on it is reached on the host clock when the drifting clock gets there.
    expect(clock.toHost(clock.monotonic())).toBe(6_000);
    expect(clock.toHost(5_800 + 80)).toBeCloseTo(6_100, 9);
    // A timer of 80 ms on a clock 20 % slow fires after 100 ms of real time.
    clock.setTimeout(() => undefined, 80);
    expect(time.timers).toEqual([100]);

    const fast = driftingClock({ rate: 0.005 }, time.sources);
    time.advance(2_000);
    expect(fast.monotonic()).toBeCloseTo(6_000 + 2_010, 9);
    expect(fast.now() - (1_700_000_001_000 + 2_010)).toBeOneOf([-1, 0]);
  });

  it('steps the wall clock back to true time each time it has drifted stepMs, never the monotonic one', () => {
    const time = fakeTime(0, 1_000_000);
    const clock = driftingClock({ rate: -0.01, stepMs: 25 }, time.sources);
    time.advance(2_000);
    expect(clock.now() - (1_000_000 + 2_000 - 20)).toBeOneOf([-1, 0]);
    time.advance(1_000); // 30 ms behind: stepped back at 25, now 5 behind
    expect(clock.now() - (1_000_000 + 3_000 - 5)).toBeOneOf([-1, 0]);
    expect(clock.monotonic()).toBeCloseTo(3_000 - 30, 9);
    for (let i = 0; i < 100; i++) {
      time.advance(137);
      expect(Math.abs(clock.now() - time.sources.wall())).toBeLessThanOrEqual(25);
    }
    // stepMs 0: the wall clock keeps true time while the monotonic one drifts.
    const monotonicOnly = driftingClock({ rate: -0.01, stepMs: 0 }, time.sources);
    time.advance(1_000);
    expect(monotonicOnly.now()).toBe(time.sources.wall());
    expect(monotonicOnly.monotonic()).toBeCloseTo(time.sources.host() - 10, 9);
  });

  it('reads the real clocks by default, from the instant it is created', () => {
    const host = hostNow();
    const wall = Date.now();
    const clock = driftingClock({ rate: -0.5 });
    const [m, n] = [clock.monotonic(), clock.now()];
    expect(m).toBeGreaterThanOrEqual(host);
    expect(m).toBeLessThanOrEqual(hostNow());
    expect(n).toBeGreaterThanOrEqual(wall);
    expect(n).toBeLessThanOrEqual(Date.now());
    expect(() => driftingClock({ rate: -1 })).toThrow(RangeError);
    // Without drift, a worker's deadlines are host-clock instants already.
    expect(workerClock(0).toHost(1234.5)).toBe(1234.5);
  });

  it('parses --drift as a percentage and judges it against rule 2: 1 % of the TTL + 2 ms', () => {
    expect(parseDriftRate('0.5%')).toBe(0.005);
    expect(parseDriftRate('-3%')).toBe(-0.03);
    expect(parseDriftRate('+50%')).toBe(0.5);
    expect(Object.is(parseDriftRate('-0%'), 0)).toBe(true);
    for (const bad of ['abc', '0.5', '200%', '-100%', '-50.1%', '%', '1e2%'])
      expect(() => parseDriftRate(bad), bad).toThrow();
    expect(driftIsBeyond(-0.01, 1000)).toBe(false);
    expect(driftIsBeyond(-0.012, 1000)).toBe(false); // 12 ms: the allowance itself
    expect(driftIsBeyond(-0.013, 1000)).toBe(true);
    expect(driftIsBeyond(-0.2, 1000)).toBe(true);
    // A fast clock makes its holder stop believing early: no allowance needed.
    expect(driftIsBeyond(0.5, 1000)).toBe(false);
  });
});
