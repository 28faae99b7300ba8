import { expect, it } from 'vitest';
import { LeaseTracker } from '../../src/cli/live/tracker.js';
import type { LeaseRecord } from '../../src/index.js';

// The rules that turn successive listings into events and spans, on made-up listings.

const SKEW = 50;
const rec = (owner: string, token: number, expiresAt: number): LeaseRecord => ({
  resource: 'r',
  owner,
  token,
  expiresAt,
});
const kinds = (t: LeaseTracker, records: LeaseRecord[], now: number): string[] =>
  t
    .apply(records, now)
    .events.map(
      (e) => `${e.type} ${e.owner}#${e.token}${e.previousOwner ? ` after ${e.previousOwner}` : ''}`,
    );

it('tells acquire, handoff, expiry and takeover apart, and keeps the spans with their gaps', () => {
  const t = new LeaseTracker(SKEW, 60_000);
  expect(kinds(t, [], 0)).toEqual([]);
  expect(kinds(t, [rec('a', 1, 2000)], 100)).toEqual(['acquired a#1']);
  expect(kinds(t, [rec('a', 1, 2600)], 600)).toEqual([]); // a renewal
  // Released and taken by b between two listings: a handoff.
  expect(kinds(t, [rec('b', 2, 3100)], 1100)).toEqual(['released a#1', 'handoff b#2 after a']);
  // b stops renewing: expired once past expiresAt plus the skew allowance, not before.
  expect(kinds(t, [rec('b', 2, 3100)], 3140)).toEqual([]);
  expect(kinds(t, [rec('b', 2, 3100)], 3200)).toEqual(['expired b#2']);
  // c takes it over later: an acquire after b, not a handoff.
  expect(kinds(t, [rec('c', 3, 6000)], 4000)).toEqual(['acquired c#3 after b']);
  const spans = t.spans.get('r')!.map((s) => [s.owner, s.token, s.from, s.to, s.end]);
  expect(spans).toEqual([
    ['a', 1, 100, 1100, 'released'],
    ['b', 2, 1100, 3150, 'expired'], // ends at expiresAt + skew: the gap until c shows
    ['c', 3, 4000, null, null],
  ]);
});

it('sees an expiry it missed between two listings, and a record that vanished', () => {
  const t = new LeaseTracker(SKEW, 60_000);
  kinds(t, [rec('a', 1, 1000)], 0);
  // Never listed while expired: the old grant is judged expired (it could not be taken while live).
  expect(kinds(t, [rec('b', 2, 5000)], 3000)).toEqual(['expired a#1', 'acquired b#2 after a']);
  expect(kinds(t, [], 3500)).toEqual(['released b#2', 'removed b#2']);
  expect(kinds(t, [], 9000)).toEqual([]);
});

it('forgets spans older than the history window', () => {
  const t = new LeaseTracker(SKEW, 1000);
  kinds(t, [rec('a', 1, 1000)], 0);
  kinds(t, [rec('', 1, 0)], 500);
  expect(t.spans.get('r')).toHaveLength(1);
  kinds(t, [rec('', 1, 0)], 1400);
  expect(t.spans.get('r')).toHaveLength(1);
  kinds(t, [rec('', 1, 0)], 1600);
  expect(t.spans.has('r')).toBe(false);
});
