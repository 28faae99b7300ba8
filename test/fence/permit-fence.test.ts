import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCode, LeaseClient, MemoryStore, type HeldLease } from '../../src/index.js';
import { FenceGuard, SqliteFence } from '../../src/fence/index.js';
import { rejection } from '../harness/expect-error.js';
import { tempDir } from '../harness/processes.js';

// A counting lease's permits have tokens of their own: permit 1 may be at token 4 while permit 0
// is at 2. A fence keyed on the name alone would refuse permit 0's holder after permit 1 wrote;
// given the lease, the fences key on the permit's record, so holders of different permits never
// refuse each other, and a stale holder of one permit is still refused.

const dir = tempDir('leasehold-permit-fence-');
afterAll(() => dir.cleanup());

/** Holders of permit 0 (token 1) and permit 1 at token 3 of `name`, and a stale permit-1 holder. */
async function permitHolders(name: string): Promise<{
  zero: HeldLease;
  one: HeldLease;
  staleOne: { resource: string; token: number; permit: number };
  close: () => Promise<void>;
}> {
  const store = new MemoryStore();
  const a = new LeaseClient({ store, owner: 'a', ttlMs: 60_000 });
  const b = new LeaseClient({ store, owner: 'b', ttlMs: 60_000 });
  const zero = (await a.tryAcquire(name, { permits: 2 }))!;
  let one = (await b.tryAcquire(name, { permits: 2 }))!;
  const first = one;
  for (let i = 0; i < 2; i++) {
    await one.release();
    one = (await b.tryAcquire(name, { permits: 2 }))!;
  }
  // Each caller starts at a random permit; b, refused none, always ends on the other one.
  expect([zero.permit + one.permit, zero.token, one.token]).toEqual([1, 1, 3]);
  return {
    zero,
    one,
    staleOne: { resource: name, token: first.token, permit: one.permit },
    close: async () => {
      await a.close();
      await b.close();
    },
  };
}

describe('fences take the permit of a counting lease into account', () => {
  it('SqliteFence.write(lease, fn): permits never refuse each other; a stale holder of one is refused', async () => {
    const db = new Database(`${dir.path}/fence.db`);
    const fence = new SqliteFence(db);
    await fence.init();
    db.exec('CREATE TABLE log (resource TEXT, token INTEGER)');
    const log = (lease: { resource: string; token: number }) => (d: typeof db) =>
      d.prepare('INSERT INTO log VALUES (?, ?)').run(lease.resource, lease.token).changes;
    const { zero, one, staleOne, close } = await permitHolders('api');
    expect(await fence.write(one, log(one))).toEqual({ accepted: true, value: 1 });
    // Token 1 of permit 0 after token 3 of permit 1: another permit, accepted.
    expect(await fence.write(zero, log(zero))).toEqual({ accepted: true, value: 1 });
    expect(await fence.write(staleOne, log(staleOne))).toEqual({ accepted: false });
    expect(await fence.highest(one)).toBe(3);
    expect(await fence.highest(zero)).toBe(1);
    // Permit 0 is the name's own record; permit 1's is lease.key.
    expect(await fence.highest('api')).toBe(zero.permit === 0 ? 1 : 3);
    expect(await fence.highest(`api\u0001permit=1`)).toBe(zero.permit === 1 ? 1 : 3);
    expect([zero.key, one.key].sort()).toEqual(['api', `api\u0001permit=1`]);
    // The name-and-token form keys on the string it is given: the name alone would have refused.
    expect(await fence.write('api-by-name', 3, log(one))).toEqual({ accepted: true, value: 1 });
    expect(await fence.write('api-by-name', 1, log(zero))).toEqual({ accepted: false });
    expect(db.prepare('SELECT count(*) AS n FROM log').get()).toEqual({ n: 3 });
    await close();
    db.close();
  });

  it('FenceGuard.check(lease) keys on the permit', async () => {
    const guard = new FenceGuard();
    const { zero, one, staleOne, close } = await permitHolders('compact');
    expect(guard.check(one)).toBe(true);
    expect(guard.check(zero)).toBe(true);
    expect(guard.check(staleOne)).toBe(false);
    expect(guard.highest(one)).toBe(3);
    expect(guard.highest('compact')).toBe(zero.permit === 0 ? 1 : 3);
    await close();
  });

  it('refuses a malformed lease with a typed error, writing nothing', async () => {
    const db = new Database(`${dir.path}/bad.db`);
    const fence = new SqliteFence(db);
    await fence.init();
    const guard = new FenceGuard();
    let ran = false;
    const fn = () => (ran = true);
    for (const [bad, field] of [
      [{ resource: 'r', token: 0 }, 'token'],
      [{ resource: '', token: 1 }, 'resource'],
      [{ resource: 'r', token: 1, permit: -1 }, 'lease.permit'],
      [{ resource: 'r', token: 1, permit: 1.5 }, 'lease.permit'],
      [null, 'lease'],
    ] as const) {
      const error = await rejection(fence.write(bad as never, fn));
      expect([error.code, error.message]).toEqual([
        ErrorCode.INVALID_ARGUMENT,
        expect.stringContaining(field),
      ]);
      expect(() => guard.check(bad as never)).toThrow(field);
    }
    const noFn = await rejection(fence.write({ resource: 'r', token: 1 }, 'nope' as never));
    expect(noFn.message).toMatch(/fn/);
    expect(ran).toBe(false);
    expect(await fence.highest('r')).toBeNull();
    db.close();
  });
});
