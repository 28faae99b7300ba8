import { expect, it } from 'vitest';
import { LIMITS, type Lease, type LeaseStore } from '../../src/index.js';
import { permitResources } from '../../src/core/permits.js';
import { rejection } from '../harness/expect-error.js';
import { describeStores, expiryWait, sleep } from './stores.js';

/** Every member's record: live ones with owner and token, free ones as `free@token`. */
async function snapshot(store: LeaseStore, names: readonly string[]): Promise<string[]> {
  return Promise.all(
    names.map(async (name) => {
      const record = await store.get(name);
      if (!record) return `${name}: none`;
      return `${name}: ${record.owner === '' ? 'free' : record.owner}@${record.token}`;
    }),
  );
}

describeStores('acquireAll (all-or-nothing groups)', ({ open, shortTtl }) => {
  it('grants every member (new, released, expired) in input order, each with its next token', async () => {
    const store = await open();
    const released = (await store.tryAcquire('grp/released', 'b', 60_000))!;
    await store.release(released);
    await store.tryAcquire('grp/expired', 'b', shortTtl);
    await sleep(expiryWait(store, shortTtl));
    const names = ['grp/new', 'grp/released', 'grp/expired'];
    const leases = await store.acquireAll(names, 'a', 5000);
    expect(leases?.map((l) => [l.resource, l.owner, l.token, l.ttlMs])).toEqual([
      ['grp/new', 'a', 1, 5000],
      ['grp/released', 'a', released.token + 1, 5000],
      ['grp/expired', 'a', expect.any(Number), 5000],
    ]);
    expect(leases![2]!.token).toBeGreaterThan(1);
    for (const lease of leases!) {
      expect(await store.get(lease.resource)).toEqual({
        resource: lease.resource,
        owner: 'a',
        token: lease.token,
        expiresAt: lease.expiresAt,
      });
    }
    // The members renew and release like any lease.
    expect((await store.renewMany(leases!, 6000)).map((l) => l?.ttlMs)).toEqual([6000, 6000, 6000]);
    expect(await store.releaseMany(leases!)).toEqual([true, true, true]);
  });

  it('keeps tokens rising per record across group grants, single grants, releases and expiry', async () => {
    const store = await open();
    const names = permitResources('tok', 3);
    const last = new Map<string, number>();
    const saw = (lease: Lease): void => {
      expect(lease.token, lease.resource).toBeGreaterThan(last.get(lease.resource) ?? 0);
      last.set(lease.resource, lease.token);
    };
    for (let round = 0; round < 3; round++) {
      const group = (await store.acquireAll(names, 'a', 5000))!;
      group.forEach(saw);
      await store.releaseMany(group);
      const single = (await store.tryAcquire(names[1]!, 'b', 5000))!;
      saw(single);
      await store.release(single);
      saw((await store.acquireFirst(names, 'c', shortTtl))!);
      // Lapsed, not released: taken over by the next group.
      await sleep(expiryWait(store, shortTtl));
      const again = (await store.acquireAll([...names].reverse(), 'd', 5000))!;
      again.forEach(saw);
      await store.releaseMany(again);
    }
    for (const name of names) expect((await store.get(name))!.token).toBe(last.get(name));
  });

  it('refuses the whole group when one member is held, and leaves no member held', async () => {
    const store = await open();
    const theirs = (await store.tryAcquire('part/b', 'other', 60_000))!;
    const names = ['part/a', 'part/b', 'part/c'];
    expect(await store.acquireAll(names, 'a', 5000)).toBeNull();
    expect(await store.acquireAll([...names].reverse(), 'a', 5000)).toBeNull();
    const after = await snapshot(store, names);
    expect(after[1]).toBe(`part/b: other@${theirs.token}`);
    // Nothing of the refused group is held: never written where the group is one atomic call,
    // given back (free, a token burnt) where members are taken one by one.
    for (const line of [after[0]!, after[2]!]) expect(line).toMatch(/: (none|free@\d+)$/);
    if (names.length <= store.capabilities.atomicGroupMax)
      expect([after[0], after[2]]).toEqual(['part/a: none', 'part/c: none']);
    // Once the holder lets go, the group is granted whole.
    await store.release(theirs);
    const leases = await store.acquireAll(names, 'a', 5000);
    expect(leases?.map((l) => l.resource)).toEqual(names);
    expect(leases![1]!.token).toBeGreaterThan(theirs.token);
  });

  it('refuses a group holding a member the caller already holds itself', async () => {
    const store = await open();
    await store.tryAcquire('self/b', 'a', 60_000);
    expect(await store.acquireAll(['self/a', 'self/b'], 'a', 5000)).toBeNull();
    expect(await snapshot(store, ['self/a'])).toEqual([
      expect.stringMatching(/: (none|free@\d+)$/),
    ]);
  });

  it('groups racing over crossing sets never share a member and never all fail for good', async () => {
    const store = await open();
    const names = ['x/1', 'x/2', 'x/3', 'x/4'];
    for (let round = 0; round < 5; round++) {
      const sets = [names, [...names].reverse(), [names[2]!, names[0]!], [names[3]!, names[1]!]];
      const results = await Promise.all(sets.map((set, i) => store.acquireAll(set, `g${i}`, 5000)));
      const owners = new Map<string, string>();
      results.forEach((leases, i) => {
        for (const lease of leases ?? []) {
          expect(owners.get(lease.resource), `${lease.resource} granted twice`).toBeUndefined();
          owners.set(lease.resource, `g${i}`);
        }
      });
      // What is held now is exactly what the granted groups got.
      for (const name of names) {
        const record = await store.get(name);
        const live = record && record.owner !== '' ? record.owner : undefined;
        expect([name, live]).toEqual([name, owners.get(name)]);
      }
      await store.releaseMany(results.flatMap((leases) => leases ?? []));
      // With every member free again, a lone group always gets through.
      const alone = await store.acquireAll(sets[round % sets.length]!, 'alone', 5000);
      expect(alone).not.toBeNull();
      await store.releaseMany(alone!);
    }
  });

  it(`takes a group of LIMITS.groupMaxSize (${LIMITS.groupMaxSize}) members`, async () => {
    const store = await open();
    const names = Array.from({ length: LIMITS.groupMaxSize }, (_, i) => `big/${i}`);
    const leases = await store.acquireAll(names, 'a', 10_000);
    expect(leases?.map((l) => l.resource)).toEqual(names);
    expect(await store.releaseMany(leases!)).toEqual(names.map(() => true));
  });

  it('refuses empty, duplicate, over-long and malformed groups, writing nothing', async () => {
    const store = await open();
    const cases: [unknown, string][] = [
      [[], 'at least one'],
      [['d/a', 'd/b', 'd/a'], 'repeats'],
      [Array.from({ length: LIMITS.groupMaxSize + 1 }, (_, i) => `d/${i}`), 'groupMaxSize'],
      [['d/a', ''], 'resources[1]'],
      ['d/a', 'must be an array'],
    ];
    for (const [bad, says] of cases) {
      const error = await rejection(store.acquireAll(bad as string[], 'a', 5000));
      expect([error.code, error.message]).toEqual([
        'INVALID_ARGUMENT',
        expect.stringContaining(says),
      ]);
    }
    const badTtl = await rejection(store.acquireAll(['d/a'], 'a', 1));
    expect(badTtl.code).toBe('INVALID_ARGUMENT');
    expect(await store.list({ prefix: 'd/' })).toEqual([]);
  });
});

describeStores('acquireFirst (one free record among candidates)', ({ open, shortTtl }) => {
  it('takes the first candidate when it is free, another free one when it is held, null when all are', async () => {
    const store = await open();
    const names = ['p/0', 'p/1', 'p/2'];
    const first = await store.acquireFirst(names, 'a', 5000);
    expect(first).toMatchObject({ resource: 'p/0', owner: 'a', token: 1, ttlMs: 5000 });
    const second = await store.acquireFirst(names, 'b', 5000);
    const third = await store.acquireFirst(names, 'c', 5000);
    expect([second?.resource, third?.resource].sort()).toEqual(['p/1', 'p/2']);
    const before = await snapshot(store, names);
    expect(await store.acquireFirst(names, 'd', 5000)).toBeNull();
    expect(await snapshot(store, names)).toEqual(before);
    // A released candidate is taken again, with its next token.
    await store.release(second!);
    const again = await store.acquireFirst(names, 'd', 5000);
    expect(again).toMatchObject({
      resource: second!.resource,
      owner: 'd',
      token: second!.token + 1,
    });
    expect(await store.get(again!.resource)).toEqual({
      resource: again!.resource,
      owner: 'd',
      token: again!.token,
      expiresAt: again!.expiresAt,
    });
  });

  it('takes an expired candidate', async () => {
    const store = await open();
    const names = ['e/0', 'e/1'];
    await store.acquireFirst(names, 'a', 60_000);
    const short = (await store.acquireFirst(names, 'b', shortTtl))!;
    expect(await store.acquireFirst(names, 'c', 5000)).toBeNull();
    await sleep(expiryWait(store, shortTtl));
    const taken = await store.acquireFirst(names, 'c', 5000);
    expect(taken).toMatchObject({ resource: short.resource, owner: 'c' });
    expect(taken!.token).toBeGreaterThan(short.token);
  });

  it('six racing callers over three candidates: exactly three win, each a different record', async () => {
    const store = await open();
    for (let round = 0; round < 3; round++) {
      // Fresh records each round: the race is over free records, not over last round's releases.
      const names = [0, 1, 2].map((i) => `race/${round}/${i}`);
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => store.acquireFirst(names, `c${i}`, 5000)),
      );
      const won = results.filter((l) => l !== null);
      // Nothing is released during the race, so a caller refused saw every candidate held: all
      // three went to someone, each to one caller.
      expect(won.length).toBe(3);
      expect(new Set(won.map((l) => l.resource)).size).toBe(3);
      for (const lease of won)
        expect(await store.get(lease.resource)).toMatchObject({
          owner: lease.owner,
          token: lease.token,
        });
      expect(await store.acquireFirst(names, 'late', 5000)).toBeNull();
      await store.releaseMany(won);
    }
  });

  it('refuses empty, duplicate and over-long candidate lists, writing nothing', async () => {
    const store = await open();
    const cases: [unknown, string][] = [
      [[], 'at least one'],
      [['q/a', 'q/a'], 'repeats'],
      [Array.from({ length: LIMITS.permitsMax + 1 }, (_, i) => `q/${i}`), 'permitsMax'],
    ];
    for (const [bad, says] of cases) {
      const error = await rejection(store.acquireFirst(bad as string[], 'a', 5000));
      expect([error.code, error.message]).toEqual([
        'INVALID_ARGUMENT',
        expect.stringContaining(says),
      ]);
    }
    expect(await store.list({ prefix: 'q/' })).toEqual([]);
  });
});
