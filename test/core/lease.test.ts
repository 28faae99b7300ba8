import { describe, expect, it } from 'vitest';
import { isLive, liveUntil, type LeaseRecord } from '../../src/core/lease.js';

const record = (owner: string, expiresAt: number): LeaseRecord => ({
  resource: 'r',
  owner,
  token: 3,
  expiresAt,
});

describe('isLive', () => {
  it('holds for an owned record up to and including expiresAt plus the allowance', () => {
    expect(isLive(record('a', 1000), 1000)).toBe(true);
    expect(isLive(record('a', 1000), 1001)).toBe(false);
    expect(isLive(record('a', 1000), 1050, 50)).toBe(true);
    expect(isLive(record('a', 1000), 1051, 50)).toBe(false);
    expect(liveUntil(record('a', 1000), 50)).toBe(1050);
  });

  it('never holds for a released record', () => {
    expect(isLive(record('', 0), 0)).toBe(false);
    expect(isLive(record('', 5000), 1000, 50)).toBe(false);
  });
});
