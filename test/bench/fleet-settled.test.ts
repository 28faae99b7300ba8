// bench:fleet's own account of when a fleet settled, from the workers' held counts over time: the
// figure the benchmarks page reports for joins, leaves and crashes, so its arithmetic is tested.
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- plain JavaScript of the benchmark, without type declarations
import { firstSaw, settledAt } from '../../bench/lib/convergence.mjs';

type Points = [number, number][];
const history = (held: Points, members: Points = []) => ({ held, members });

describe('settledAt', () => {
  it('is the start of the last settled stretch, not the first', () => {
    const histories = {
      a: history([
        [0, 0],
        [100, 5],
        [300, 4],
        [400, 5],
      ]),
      b: history([
        [0, 0],
        [100, 5],
        [300, 6],
        [350, 5],
      ]),
    };
    // Settled at 100 (5 + 5), not at 300 (4 + 6 sums to 10 but 4 and 6 are not within 1 of 5),
    // not at 350 (4 + 5 = 9), settled again at 400.
    expect(settledAt({ histories, live: ['a', 'b'], resources: 10 })).toBe(400);
  });

  it('judges the changes of one instant together', () => {
    const histories = {
      a: history([
        [0, 10],
        [200, 5],
      ]),
      b: history([
        [0, 0],
        [200, 5],
      ]),
    };
    expect(settledAt({ histories, live: ['a', 'b'], resources: 10 })).toBe(200);
  });

  it('is null when the last moment is not settled, and ignores managers not live', () => {
    const histories = {
      a: history([[0, 5]]),
      b: history([
        [0, 5],
        [50, 4],
      ]),
      gone: history([[0, 1]]),
    };
    expect(settledAt({ histories, live: ['a', 'b'], resources: 10 })).toBeNull();
    expect(settledAt({ histories, live: ['a'], resources: 5 })).toBe(0);
  });

  it('counts a live manager with no history as holding nothing', () => {
    const histories = { a: history([[0, 10]]) };
    expect(settledAt({ histories, live: ['a', 'new'], resources: 10 })).toBeNull();
  });
});

describe('firstSaw', () => {
  it('is the earliest view of the asked member count at or after `since`', () => {
    const histories = {
      a: history(
        [],
        [
          [10, 3],
          [500, 3],
        ],
      ),
      b: history([], [[300, 3]]),
    };
    expect(firstSaw({ histories, live: ['a', 'b'], members: 3, since: 100 })).toBe(300);
    expect(firstSaw({ histories, live: ['a', 'b'], members: 4, since: 0 })).toBeNull();
  });
});
