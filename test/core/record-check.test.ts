import { describe, expect, it } from 'vitest';
import { recordExpiresAt, recordOwner, recordToken } from '../../src/core/record-check.js';
import { LeaseError } from '../../src/index.js';

function refused(fn: () => unknown, problem: RegExp): void {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(LeaseError);
    expect((error as LeaseError).code).toBe('RECORD_INVALID');
    expect((error as LeaseError).retryable).toBe(false);
    expect((error as LeaseError).resource).toBe('r');
    expect((error as LeaseError).message).toMatch(problem);
    return;
  }
  throw new Error('not refused');
}

describe('record fields read from a store', () => {
  it('reads tokens exactly and refuses what no grant writes', () => {
    expect(recordToken('r', 7)).toBe(7);
    expect(recordToken('r', '9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    expect(recordToken('r', 42n)).toBe(42);
    refused(() => recordToken('r', '9007199254740992'), /token is "9007199254740992"/);
    refused(() => recordToken('r', 2n ** 63n), /not a positive safe integer/);
    refused(() => recordToken('r', 0), /token is 0/);
    refused(() => recordToken('r', -3), /token is -3/);
    refused(() => recordToken('r', '-3'), /token is "-3"/);
    refused(() => recordToken('r', 1.5), /token is 1.5/);
    refused(() => recordToken('r', '1e3'), /token is "1e3"/);
    refused(() => recordToken('r', undefined), /token is missing/);
    refused(() => recordToken('r', { n: 1 }), /token is object/);
  });

  it('reads owners up to the limit and expiry times that are whole non-negative ms', () => {
    expect(recordOwner('r', '')).toBe('');
    expect(recordOwner('r', 'w'.repeat(256))).toHaveLength(256);
    refused(() => recordOwner('r', 'w'.repeat(257)), /owner is 257 bytes, over 256/);
    refused(() => recordOwner('r', 5), /owner is 5/);
    refused(
      () => recordOwner('r', 'x'.repeat(10_000) + 1),
      /a string of 10001 characters|10001 bytes/,
    );
    expect(recordExpiresAt('r', 0)).toBe(0);
    expect(recordExpiresAt('r', '1700000000000')).toBe(1_700_000_000_000);
    refused(() => recordExpiresAt('r', -1), /expiresAt is -1/);
    refused(() => recordExpiresAt('r', 'soon'), /expiresAt is "soon"/);
    refused(() => recordExpiresAt('r', Infinity), /expiresAt is Infinity/);
  });

  it('says where such a record comes from and that it is never treated as free', () => {
    try {
      recordToken('jobs/7', -1);
    } catch (error) {
      expect((error as Error).message).toContain('"jobs/7"');
      expect((error as Error).message).toMatch(/written by hand or by another program/);
      expect((error as Error).message).toMatch(/never treated as free/);
    }
  });
});
