import { describe, expect, it } from 'vitest';
import { Fallbacks } from '../../src/fleet/fallbacks.js';
import { ManualClock } from '../../src/testing/index.js';

const STEP = 200;
const members = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];

describe('Fallbacks', () => {
  it('gives every member but the assigned one its own turn for a resource, one step apart', () => {
    const fallbacks = new Fallbacks(new ManualClock(), STEP);
    for (let i = 0; i < 200; i++) {
      const resource = `r/${i}`;
      const target = members[i % members.length]!;
      const turns = members
        .filter((m) => m !== target)
        .map((m) => fallbacks.delayFor(resource, m, members, target))
        .sort((x, y) => x - y);
      // Never two at once among the first: the turns are 0, 1, 2, 3 steps, one each, then the
      // rest share the fourth step (a large fleet waits no longer than that).
      expect(turns).toEqual(members.slice(1).map((_, k) => Math.min(k, 4) * STEP));
    }
  });

  it('orders the others differently per resource, so no member is always last', () => {
    const fallbacks = new Fallbacks(new ManualClock(), STEP);
    const firstTurns = new Map<string, number>();
    for (let i = 0; i < 400; i++) {
      for (const m of members.slice(1)) {
        if (fallbacks.delayFor(`r/${i}`, m, members, 'a') === 0)
          firstTurns.set(m, (firstTurns.get(m) ?? 0) + 1);
      }
    }
    expect([...firstTurns.keys()].sort()).toEqual(members.slice(1));
    for (const count of firstTurns.values()) expect(count).toBeGreaterThan(20);
  });

  it('counts every member when the assigned one is unknown', () => {
    const fallbacks = new Fallbacks(new ManualClock(), STEP);
    const turns = members
      .map((m) => fallbacks.delayFor('r/x', m, members, undefined))
      .sort((x, y) => x - y);
    expect(turns).toEqual(members.map((_, k) => Math.min(k, 4) * STEP));
  });

  it('runs a deferred take at its turn, once; one seen taken before its turn is never tried', async () => {
    const clock = new ManualClock();
    const fallbacks = new Fallbacks(clock, STEP);
    const tried: string[] = [];
    fallbacks.defer('late', 2 * STEP, () => tried.push('late'));
    fallbacks.defer('late', STEP, () => tried.push('late again')); // already waiting: ignored
    fallbacks.defer('gone', STEP, () => tried.push('gone'));
    expect(fallbacks.size).toBe(2);
    await clock.advance(STEP - 1);
    fallbacks.taken('gone');
    await clock.advance(1);
    expect(tried).toEqual([]);
    await clock.advance(STEP);
    expect(tried).toEqual(['late']);
    expect(fallbacks.size).toBe(0);
    fallbacks.defer('cleared', STEP, () => tried.push('cleared'));
    fallbacks.clear();
    await clock.advance(10 * STEP);
    expect(tried).toEqual(['late']);
  });
});
