import { describe, expect, it } from 'vitest';
import { ErrorCode, LeaseError, type Lease, type LeaseRecord } from '../../src/index.js';
import { acquireFirstByList, type SingleOps } from '../../src/core/store-defaults.js';

/** Single operations over a map of held names; `list` fails with `listError` when given. */
function ops(held: Set<string>, listError?: Error): SingleOps & { tried: string[] } {
  const tried: string[] = [];
  return {
    tried,
    tryAcquire: async (resource, owner, ttlMs) => {
      tried.push(resource);
      if (held.has(resource)) return null;
      held.add(resource);
      return { resource, owner, token: 1, expiresAt: Date.now() + ttlMs, ttlMs } as Lease;
    },
    releaseMany: async (leases) => leases.map(() => true),
    list: async (): Promise<LeaseRecord[]> => {
      if (listError) throw listError;
      return [...held].map((resource) => ({
        resource,
        owner: 'x',
        token: 1,
        expiresAt: Date.now() + 60_000,
      }));
    },
    now: () => Date.now(),
    allowanceMs: 0,
  };
}

describe('the default acquireFirst (one try, one look, then the free-looking ones)', () => {
  it('tries only the candidates the look shows free', async () => {
    const o = ops(new Set(['a', 'b', 'c']));
    const lease = await acquireFirstByList(o, ['a', 'b', 'c', 'd'], 'me', 1000);
    expect(lease?.resource).toBe('d');
    expect(o.tried).toEqual(['a', 'd']);
  });

  it('when the look cannot be answered now, tries every candidate in order instead', async () => {
    const slow = new LeaseError(ErrorCode.STORE_UNAVAILABLE, 'list: no answer within 3000 ms');
    const o = ops(new Set(['a', 'b']), slow);
    const lease = await acquireFirstByList(o, ['a', 'b', 'c'], 'me', 1000);
    expect(lease?.resource).toBe('c');
    expect(o.tried).toEqual(['a', 'b', 'c']);
  });

  it('a failure that is not worth retrying is thrown', async () => {
    const broken = new LeaseError(ErrorCode.STORE_UNSAFE, 'no conditional writes', {
      retryable: false,
    });
    const o = ops(new Set(['a']), broken);
    await expect(acquireFirstByList(o, ['a', 'b'], 'me', 1000)).rejects.toBe(broken);
  });
});
