import { describe, expect, it } from 'vitest';
import type { Lease } from '../../src/core/lease.js';
import { renewCopies } from '../../src/core/renew-copies.js';

const lease = (resource: string, owner: string, token: number, ttlMs: number): Lease => ({
  resource,
  owner,
  token,
  ttlMs,
  expiresAt: 1,
});

describe('renewCopies', () => {
  it('renews a lease listed twice once, with the longest TTL, and answers every copy', () => {
    const a = lease('r', 'a', 1, 1000);
    const b = lease('r', 'b', 1, 1000); // another owner: another lease
    const copy = { ...a, ttlMs: 9000, data: 'x' };
    const copies = renewCopies([a, b, copy, a], undefined);
    expect(copies.unique.map((l) => `${l.owner} ${l.ttlMs}`)).toEqual(['a 9000', 'b 1000']);
    const answers = copies.answer([{ ...a, ttlMs: 9000, expiresAt: 500 }, null]);
    expect(answers.map((l) => l && [l.expiresAt, l.ttlMs, l.data])).toEqual([
      [500, 9000, undefined],
      null,
      [500, 9000, 'x'],
      [500, 9000, undefined],
    ]);
  });

  it('leaves a batch without copies as it is, and a TTL given for all alone', () => {
    const leases = [lease('r', 'a', 1, 1000), lease('r', 'a', 2, 1000), lease('ra', '', 1, 1000)];
    expect(renewCopies(leases, undefined).unique).toBe(leases);
    const withTtl = renewCopies([leases[0]!, { ...leases[0]!, ttlMs: 5000 }], 2000);
    expect(withTtl.unique).toEqual([leases[0]]);
  });
});
