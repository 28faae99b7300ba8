import { expect, it } from 'vitest';
import type { Lease, ListOptions } from '../../src/index.js';
import { describeStores, expiryWait, sleep } from './stores.js';

describeStores('batch calls', ({ open, shortTtl }) => {
  it('renewMany answers each lease in input order, mixing live and lost ones', async () => {
    const store = await open();
    const live1 = (await store.tryAcquire('b1', 'a', 5000))!;
    const released = (await store.tryAcquire('b2', 'a', 5000))!;
    await store.release(released);
    const live2 = (await store.tryAcquire('b3', 'a', 5000))!;
    const stolen = (await store.tryAcquire('b4', 'a', shortTtl))!;
    const ghost: Lease = { resource: 'b5', owner: 'a', token: 1, expiresAt: 1, ttlMs: 5000 };
    await sleep(expiryWait(store, shortTtl));
    await store.tryAcquire('b4', 'b', 5000);

    const results = await store.renewMany([live1, released, live2, stolen, ghost], 7000);
    expect(results.map((r) => r?.resource ?? null)).toEqual(['b1', null, 'b3', null, null]);
    expect(results[0]).toMatchObject({ owner: 'a', token: live1.token, ttlMs: 7000 });
    expect(results[0]!.expiresAt).toBeGreaterThanOrEqual(live1.expiresAt);
    expect((await store.get('b3'))!.expiresAt).toBe(results[2]!.expiresAt);
    expect(await store.get('b4')).toMatchObject({ owner: 'b', token: 2 });
    expect(await store.get('b2')).toMatchObject({ owner: '', token: 1 });
  });

  it('renewMany without a ttl keeps each lease its own ttl', async () => {
    const store = await open();
    const a = (await store.tryAcquire('t1', 'a', 1000))!;
    const b = (await store.tryAcquire('t2', 'a', 4000))!;
    const [ra, rb] = await store.renewMany([a, b]);
    expect([ra!.ttlMs, rb!.ttlMs]).toEqual([1000, 4000]);
  });

  it('releaseMany answers each lease in input order and releases only what was ours', async () => {
    const store = await open();
    const mine = (await store.tryAcquire('r1', 'a', 5000))!;
    const theirs = (await store.tryAcquire('r2', 'b', 5000))!;
    const mine2 = (await store.tryAcquire('r3', 'a', 5000))!;
    const results = await store.releaseMany([mine, { ...theirs, owner: 'a' }, mine2, mine]);
    expect(results).toEqual([true, false, true, false]);
    expect(await store.get('r1')).toMatchObject({ owner: '', expiresAt: 0 });
    expect(await store.get('r2')).toMatchObject({ owner: 'b', token: 1 });
    expect(await store.get('r3')).toMatchObject({ owner: '', expiresAt: 0 });
  });

  it('renewMany and releaseMany racing single renewals of the same leases answer as the model says', async () => {
    const store = await open();
    const names = Array.from({ length: 20 }, (_, i) => `race/${i}`);
    const leases = (await store.acquireMany(names, 'a', 5000)).map((o) => o.lease!);
    const [batch, ...singles] = await Promise.all([
      store.renewMany(leases),
      ...leases.map((l) => store.renew(l)),
    ]);
    expect(batch.map((l) => l?.token)).toEqual(leases.map(() => 1));
    expect(singles.map((l) => l?.token)).toEqual(leases.map(() => 1));
    const [released, ...late] = await Promise.all([
      store.releaseMany(leases),
      ...leases.map((l) => store.renew(l)),
    ]);
    expect(released).toEqual(leases.map(() => true));
    // A renewal landed before the release (answered with the lease) or after it (null).
    for (const r of late) if (r !== null) expect(r).toMatchObject({ owner: 'a', token: 1 });
    const records = await Promise.all(names.map((n) => store.get(n)));
    expect(records.map((r) => [r?.owner, r?.expiresAt])).toEqual(names.map(() => ['', 0]));
  });

  it('answers a lease listed twice, a stale token and a forged owner as one-by-one calls would', async () => {
    const store = await open();
    const a = (await store.tryAcquire('d1', 'a', 1000))!;
    const b = (await store.tryAcquire('d2', 'b', 5000))!;
    const renewed = await store.renewMany([
      a,
      { ...a, owner: 'mallory' },
      { ...a, token: a.token + 1 },
      b,
      { ...a, ttlMs: 9000 },
    ]);
    expect(renewed.map((r) => r && `${r.resource} ${r.owner} ${r.token}`)).toEqual([
      'd1 a 1',
      null,
      null,
      'd2 b 1',
      'd1 a 1',
    ]);
    // The record keeps the longest expiry granted, so no holder believes in more than is stored.
    const stored = (await store.get('d1'))!.expiresAt;
    expect(Math.max(renewed[0]!.expiresAt, renewed[4]!.expiresAt)).toBe(stored);
    expect(renewed[4]!.ttlMs).toBe(9000);
    // The longer TTL listed first: a copy written after it must not shorten the record.
    const again = await store.renewMany([{ ...a, ttlMs: 9000 }, a]);
    const storedAgain = (await store.get('d1'))!.expiresAt;
    expect(Math.max(again[0]!.expiresAt, again[1]!.expiresAt)).toBe(storedAgain);

    const released = await store.releaseMany([{ ...b, owner: 'mallory' }, b, b, a]);
    expect(released).toEqual([false, true, false, true]);
    expect(await store.list({ prefix: 'd' })).toEqual([
      { resource: 'd1', owner: '', token: 1, expiresAt: 0 },
      { resource: 'd2', owner: '', token: 1, expiresAt: 0 },
    ]);
  });

  it('batches any names exactly and pages in code-point order, not a collation', async () => {
    const store = await open();
    // Names that mean something in SQL, in array and JSON literals, in quoting, and at the edges
    // of UTF-8 and of the control characters.
    const odd = [
      'NULL',
      'a,b',
      '[x]',
      '{x}',
      '"q"',
      'back\\slash',
      ' sp ',
      "it's",
      '\u{10FFFF}',
      'ctl\tnew\nline\u0001',
    ];
    const granted = await store.acquireMany(odd, 'a', 60_000);
    expect(granted.map((o) => o.lease?.resource)).toEqual(odd);
    for (const name of odd)
      expect(await store.get(name)).toMatchObject({ resource: name, token: 1 });
    await store.acquireMany(['p/Z', 'p/a', 'p/é', 'p/😀'], 'a', 60_000);
    const page = async (options: ListOptions): Promise<string[]> =>
      (await store.list(options)).map((r) => r.resource);
    expect(await page({ prefix: 'p/', after: 'p/Z' })).toEqual(['p/a', 'p/é', 'p/😀']);
    expect(await page({ prefix: 'p/', after: 'p/é', limit: 1 })).toEqual(['p/😀']);
    expect(await page({ prefix: 'p/', after: 'a' })).toEqual(['p/Z', 'p/a', 'p/é', 'p/😀']);
    expect(await page({ after: 'p/😀' })).toEqual(['{x}', '\u{10FFFF}']);
  });

  it('empty batches return empty arrays', async () => {
    const store = await open();
    expect(await store.renewMany([])).toEqual([]);
    expect(await store.releaseMany([])).toEqual([]);
  });

  it('handles a batch of 500 leases', async () => {
    const store = await open();
    const leases: Lease[] = [];
    for (let i = 0; i < 500; i++) leases.push((await store.tryAcquire(`many/${i}`, 'a', 5000))!);
    const renewed = await store.renewMany(leases);
    expect(renewed.every((r, i) => r?.resource === `many/${i}`)).toBe(true);
    const released = await store.releaseMany(leases);
    expect(released.every(Boolean)).toBe(true);
    expect((await store.list({ prefix: 'many/', limit: 1000 })).every((r) => r.owner === '')).toBe(
      true,
    );
  });
});
