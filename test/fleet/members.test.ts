import { describe, expect, it } from 'vitest';
import type { LeaseRecord } from '../../src/index.js';
import { liveMembers, membersPrefix, newSlot, slotsToTry } from '../../src/fleet/members.js';

const prefix = membersPrefix('g');
const NOW = 1_000_000;
const rec = (name: string, owner: string, expiresAt = NOW + 5000, token = 1): LeaseRecord => ({
  resource: prefix + name,
  owner,
  token,
  expiresAt,
});

describe('membership slots', () => {
  it('names a new slot @ and 8 hex digits, with the limit when there is one', () => {
    expect(newSlot(prefix, Infinity)).toMatch(/^leasehold\/members\/g\/@[0-9a-f]{8}$/);
    expect(newSlot(prefix, 7)).toMatch(/^leasehold\/members\/g\/@[0-9a-f]{8}#max=7$/);
    expect(newSlot(prefix, 7)).not.toBe(newSlot(prefix, 7));
  });

  it('reads live members from slots and from records named after their owner, with limits', () => {
    const members = liveMembers(
      [
        rec('@0000000a', 'w1'),
        rec('@0000000b#max=3', 'w2'),
        rec('w3', 'w3'), // written before slots
        rec('w4#max=5', 'w4'),
        rec('@0000000c', '', 0), // released
        rec('@0000000d', 'dead', NOW - 10_000), // expired
        rec('@0000000e', 'fresh', NOW - 50), // expired by less than the skew allowance
        rec('junk', 'someone-else'), // neither a slot nor named after its owner
        rec('@0000000f#max=x', 'w5'), // a malformed limit
      ],
      prefix,
      NOW,
      100,
    );
    expect(members.sort((a, b) => (a.id < b.id ? -1 : 1))).toEqual([
      { id: 'fresh', limit: Infinity },
      { id: 'w1', limit: Infinity },
      { id: 'w2', limit: 3 },
      { id: 'w3', limit: Infinity },
      { id: 'w4', limit: 5 },
    ]);
  });

  it('tries free slots with the same limit first (at most three), then a new one', () => {
    const records = [
      rec('@00000001', '', 0),
      rec('@00000002', 'dead', NOW - 10_000),
      rec('@00000003', 'alive'),
      rec('@00000004#max=2', '', 0), // another limit
      rec('w9', '', 0), // named after an owner: never reused by someone else
      rec('@00000005', '', 0),
      rec('@00000006', '', 0),
    ];
    const slots = slotsToTry(records, prefix, Infinity, NOW, 100);
    expect(slots).toHaveLength(4);
    const free = ['@00000001', '@00000002', '@00000005', '@00000006'].map((n) => prefix + n);
    for (const s of slots.slice(0, 3)) expect(free).toContain(s);
    expect(new Set(slots.slice(0, 3)).size).toBe(3);
    expect(slots[3]).toMatch(/\/@[0-9a-f]{8}$/);
    expect(free).not.toContain(slots[3]);

    const limited = slotsToTry(records, prefix, 2, NOW, 100);
    expect(limited[0]).toBe(prefix + '@00000004#max=2');
    expect(limited[1]).toMatch(/\/@[0-9a-f]{8}#max=2$/);
    // Within the grace period an expired record is not yet free.
    expect(slotsToTry([rec('@00000007', 'x', NOW - 50)], prefix, Infinity, NOW, 100)).toHaveLength(
      1,
    );
  });
});
