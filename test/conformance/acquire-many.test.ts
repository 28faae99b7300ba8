import { expect, it } from 'vitest';
import { rejection } from '../harness/expect-error.js';
import { describeStores, expiryWait, sleep } from './stores.js';

describeStores('acquireMany', ({ open, shortTtl, factory }) => {
  it('grants free, released and expired resources and refuses live ones, in input order', async () => {
    const store = await open();
    const theirs = (await store.tryAcquire('m/live', 'b', 60_000))!;
    const released = (await store.tryAcquire('m/released', 'b', 60_000))!;
    await store.release(released);
    await store.tryAcquire('m/expired', 'b', shortTtl);
    const mine = (await store.tryAcquire('m/mine', 'a', 60_000))!;
    await sleep(expiryWait(store, shortTtl));

    const names = ['m/new', 'm/live', 'm/released', 'm/expired', 'm/mine'];
    const outcomes = await store.acquireMany(names, 'a', 5000);
    expect(outcomes.map((o) => o.resource)).toEqual(names);
    expect(outcomes.map((o) => o.lease?.token ?? null)).toEqual([1, null, 2, 2, null]);
    for (const o of outcomes.filter((x) => x.lease)) {
      expect(o.lease).toMatchObject({ resource: o.resource, owner: 'a', ttlMs: 5000 });
      expect(await store.get(o.resource)).toEqual({
        resource: o.resource,
        owner: 'a',
        token: o.lease!.token,
        expiresAt: o.lease!.expiresAt,
      });
    }
    // A live lease stays exactly as it was, whoever asks; the holder is reported when the store can.
    expect(await store.get('m/live')).toEqual({
      resource: 'm/live',
      owner: 'b',
      token: theirs.token,
      expiresAt: theirs.expiresAt,
    });
    expect(await store.get('m/mine')).toMatchObject({ owner: 'a', token: mine.token });
    for (const [i, holder] of [
      [1, theirs],
      [4, mine],
    ] as const) {
      const reported = outcomes[i]!.holder;
      if (reported !== undefined) {
        expect(reported).toMatchObject({
          resource: holder.resource,
          owner: holder.owner,
          token: holder.token,
        });
        expect(Math.abs(reported.expiresAt - holder.expiresAt)).toBeLessThan(2000);
      }
    }
  });

  it('grants leases that renew and release like single acquires', async () => {
    const store = await open();
    const outcomes = await store.acquireMany(['g/1', 'g/2', 'g/3'], 'a', 5000);
    const leases = outcomes.map((o) => o.lease!);
    expect((await store.renewMany(leases, 6000)).map((l) => l?.ttlMs)).toEqual([6000, 6000, 6000]);
    expect(await store.releaseMany(leases)).toEqual([true, true, true]);
    const again = await store.acquireMany(['g/1', 'g/2', 'g/3'], 'b', 5000);
    expect(again.map((o) => o.lease?.token)).toEqual([2, 2, 2]);
  });

  it('two racing batches over the same resources never grant one resource twice', async () => {
    const store = await open();
    const names = Array.from({ length: 40 }, (_, i) => `race/${String(i).padStart(2, '0')}`);
    const reversed = [...names].reverse();
    const [a, b, c] = await Promise.all([
      store.acquireMany(names, 'a', 5000),
      store.acquireMany(reversed, 'b', 5000),
      store.acquireMany(
        names.filter((_, i) => i % 2 === 0),
        'c',
        5000,
      ),
    ]);
    const winners = new Map<string, string[]>();
    for (const [owner, outcomes] of [
      ['a', a],
      ['b', b],
      ['c', c],
    ] as const) {
      for (const o of outcomes)
        if (o.lease) winners.set(o.resource, [...(winners.get(o.resource) ?? []), owner]);
    }
    for (const name of names) {
      expect(winners.get(name), name).toHaveLength(1);
      const record = (await store.get(name))!;
      expect(record.owner).toBe(winners.get(name)![0]);
      expect(record.token).toBe(1);
    }
  });

  it('handles a batch of 2,000 resources', async () => {
    const store = await open();
    const names = Array.from({ length: 2000 }, (_, i) => `big/${i}`);
    await store.tryAcquire('big/7', 'b', 60_000);
    const outcomes = await store.acquireMany(names, 'a', 10_000);
    expect(outcomes.filter((o) => o.lease).length).toBe(1999);
    expect(outcomes[7]!.lease).toBeNull();
    expect(outcomes.every((o, i) => o.resource === names[i])).toBe(true);
    const listed = await store.list({ prefix: 'big/', limit: 5000 });
    expect(listed.filter((r) => r.owner === 'a')).toHaveLength(1999);
  });

  it('an empty batch is an empty answer', async () => {
    const store = await open();
    expect(await store.acquireMany([], 'a', 5000)).toEqual([]);
  });

  it('refuses bad batches with INVALID_ARGUMENT naming the problem, touching nothing', async () => {
    const store = await open();
    const cases: [unknown, RegExp][] = [
      ['m/x', /resources must be an array/],
      [['ok', ''], /resources\[1\] must not be empty/],
      [['ok', 42], /resources\[1\] must be a string/],
      [['dup', 'other', 'dup'], /resources\[2\] repeats "dup"/],
      [Array.from({ length: 10_001 }, (_, i) => `n${i}`), /at most 10000/],
    ];
    for (const [resources, message] of cases) {
      const error = await rejection(store.acquireMany(resources as string[], 'a', 5000));
      expect(error.code, String(message)).toBe('INVALID_ARGUMENT');
      expect(error.message).toMatch(message);
    }
    expect((await rejection(store.acquireMany(['a'], '', 5000))).message).toMatch(/owner/);
    expect((await rejection(store.acquireMany(['a'], 'o', 5))).message).toMatch(/ttlMs/);
    expect(await store.get('ok')).toBeNull();
    expect(await store.get('dup')).toBeNull();
    void factory;
  });
});

describeStores('list paging', ({ open }) => {
  it('pages through every record with after, in resource order, without repeats', async () => {
    const store = await open();
    const names = Array.from({ length: 57 }, (_, i) => `p/${String(i).padStart(3, '0')}`);
    await store.acquireMany(names, 'a', 60_000);
    await store.tryAcquire('q/outside', 'a', 60_000);
    const seen: string[] = [];
    let after = '';
    for (let pages = 0; pages < 20; pages++) {
      const page = await store.list({ prefix: 'p/', limit: 10, after });
      seen.push(...page.map((r) => r.resource));
      if (page.length < 10) break;
      after = page.at(-1)!.resource;
    }
    expect(seen).toEqual(names);
    expect((await store.list({ prefix: 'p/', after: 'p/055' })).map((r) => r.resource)).toEqual([
      'p/056',
    ]);
    expect(await store.list({ prefix: 'p/', after: 'p/056' })).toEqual([]);
    expect((await store.list({ after: 'p/056' })).map((r) => r.resource)).toEqual(['q/outside']);
  });
});
