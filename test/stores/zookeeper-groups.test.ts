import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Lease, LeaseRecord, LeaseStore } from '../../src/index.js';
import { parseStoreUrl } from '../../src/core/store-url.js';
import { openZookeeper } from '../../src/stores/zookeeper/open.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';
import { countingRelay } from '../harness/zookeeper-relay.js';
import { ZookeeperServer, zookeeperUnavailable } from '../harness/zookeeper-server.js';

const permits = (name: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => (i === 0 ? name : `${name}\u0001permit=${i}`));
const slots = (name: string): string[] =>
  Array.from({ length: 256 }, (_, i) => `${name}\u0001queue=${String(i).padStart(3, '0')}`);
const names = (base: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${base}/${i}`);

describeServer('zookeeper store: groups and acquireFirst', zookeeperUnavailable(), () => {
  let server: ZookeeperServer;
  let relay: Awaited<ReturnType<typeof countingRelay>>;
  /** Through the counting relay. */
  let store: LeaseStore;
  /** Straight to the server, on sessions of its own. */
  let other: LeaseStore;
  const opened: LeaseStore[] = [];
  let n = 0;
  const fresh = (): string => `g${++n}`;

  beforeAll(async () => {
    server = await ZookeeperServer.start();
    relay = await countingRelay(server.clientPort);
    store = await openZookeeper(
      parseStoreUrl(`zookeeper://127.0.0.1:${relay.port}/groups?timeoutMs=3000`),
    );
    other = await openZookeeper(parseStoreUrl(`${server.url}/groups?timeoutMs=3000`));
    opened.push(store, other);
    // Sessions are opened on first use of a TTL: open them before anything is counted.
    for (const s of [store, other]) await s.release((await s.tryAcquire('warm', 'w', 5000))!);
  }, 30_000);
  afterAll(async () => {
    await Promise.allSettled(opened.map((s) => s.close()));
    await relay?.close();
    await server?.stop();
  });

  /** The requests `work` made reach the server through `store`, by type. */
  const requestsOf = async (work: () => Promise<unknown>): Promise<Record<string, number>> => {
    relay.counts.clear();
    await work();
    return Object.fromEntries([...relay.counts].sort());
  };
  /** What a look at `count` records costs: one clock write, a record read and a hold read each. */
  const look = (count: number): Record<string, number> => ({
    exists: count,
    getData: count,
    setData: 1,
  });
  /** Every record under `prefix`: what a refused call must leave exactly as it was. */
  const recordsOf = (prefix: string): Promise<LeaseRecord[]> => other.list({ prefix });

  it('declares groups of up to LIMITS.groupMaxSize as one multi', () => {
    expect(store.capabilities.atomicGroupMax).toBe(100);
  });

  it.each([2, 10, 100])(
    'acquireAll of %i members acquired before: one multi granted; refused, the multi and one look, writing nothing',
    async (size) => {
      const group = names(fresh(), size);
      await other.releaseMany((await other.acquireMany(group, 'b', 5000)).map((o) => o.lease!));
      let got: Lease[] | null = null;
      expect(
        await requestsOf(async () => (got = await store.acquireAll(group, 'a', 5000))),
      ).toEqual({ multi: 1 });
      expect(got!.map((l) => [l.resource, l.owner, l.token])).toEqual(
        group.map((r) => [r, 'a', 2]),
      );
      await store.releaseMany(got!);

      const blocker = await other.tryAcquire(group[size - 1]!, 'b', 60_000);
      expect(blocker?.token).toBe(3);
      const prefix = group[0]!.slice(0, group[0]!.indexOf('/') + 1);
      const before = await recordsOf(prefix);
      expect(
        await requestsOf(async () => (got = await store.acquireAll(group, 'a', 5000))),
      ).toEqual({ multi: 1, ...look(size) });
      expect(got).toBeNull();
      expect(await recordsOf(prefix)).toEqual(before);
      await other.release(blocker!);
    },
  );

  it('acquireAll of members never acquired: the refused multi, one look, and the multi that creates them', async () => {
    const group = names(fresh(), 10);
    let got: Lease[] | null = null;
    expect(await requestsOf(async () => (got = await store.acquireAll(group, 'a', 5000)))).toEqual({
      multi: 2,
      ...look(10),
    });
    expect(got!.every((l) => l.token === 1)).toBe(true);
    // Some members known, some new: the same three steps.
    const mixed = [...group.slice(0, 5), ...names(fresh(), 5)];
    await store.releaseMany(got!);
    expect(await requestsOf(async () => (got = await store.acquireAll(mixed, 'a', 5000)))).toEqual({
      multi: 2,
      ...look(10),
    });
    expect(got!.map((l) => l.token)).toEqual([2, 2, 2, 2, 2, 1, 1, 1, 1, 1]);
  });

  it('acquireAll takes over a member whose holder stopped renewing (its session still alive), judged on the server clock', async () => {
    const group = names(fresh(), 3);
    await other.releaseMany((await other.acquireMany(group, 'b', 5000)).map((o) => o.lease!));
    const lapsing = await other.tryAcquire(group[1]!, 'b', 300);
    expect(lapsing?.token).toBe(2);
    expect(await store.acquireAll(group, 'a', 5000)).toBeNull(); // still live
    await sleep(500);
    let got: Lease[] | null = null;
    expect(await requestsOf(async () => (got = await store.acquireAll(group, 'a', 5000)))).toEqual({
      multi: 2,
      ...look(3),
    });
    expect(got!.map((l) => l.token)).toEqual([2, 3, 2]);
    expect(await other.renew(lapsing!)).toBeNull();
  });

  it('acquireFirst over 5 permits: one multi when the first is free; else the multi, one look, and a multi for the free one; none free, no second multi', async () => {
    const sem = permits(fresh(), 5);
    await other.releaseMany((await other.acquireMany(sem, 'b', 5000)).map((o) => o.lease!));
    let got: Lease | null = null;
    expect(await requestsOf(async () => (got = await store.acquireFirst(sem, 'a', 5000)))).toEqual({
      multi: 1,
    });
    expect(got).toMatchObject({ resource: sem[0], token: 2 });
    for (const r of sem.slice(1, 4)) await other.tryAcquire(r, 'b', 60_000);
    expect(await requestsOf(async () => (got = await store.acquireFirst(sem, 'c', 5000)))).toEqual({
      multi: 2,
      ...look(5),
    });
    expect(got).toMatchObject({ resource: sem[4], owner: 'c', token: 2 });
    const before = await recordsOf(sem[0]!);
    expect(await requestsOf(async () => (got = await store.acquireFirst(sem, 'd', 5000)))).toEqual({
      multi: 1,
      ...look(5),
    });
    expect(got).toBeNull();
    expect(await recordsOf(sem[0]!)).toEqual(before);
    // A first candidate never acquired: two multis, as a single acquire.
    expect(
      await requestsOf(
        async () => (got = await store.acquireFirst(permits(fresh(), 5), 'a', 5000)),
      ),
    ).toEqual({ multi: 2 });
  });

  it('acquireFirst over the 256 slots of a fair line: the same counts, the look covering every slot', async () => {
    const line = slots(fresh());
    await other.releaseMany((await other.acquireMany(line, 'b', 5000)).map((o) => o.lease!));
    let got: Lease | null = null;
    expect(await requestsOf(async () => (got = await store.acquireFirst(line, 'a', 5000)))).toEqual(
      {
        multi: 1,
      },
    );
    await other.acquireMany(line.slice(1, 200), 'b', 60_000);
    expect(await requestsOf(async () => (got = await store.acquireFirst(line, 'c', 5000)))).toEqual(
      {
        multi: 2,
        ...look(256),
      },
    );
    expect(got).toMatchObject({ resource: line[200], owner: 'c', token: 2 });
    await other.acquireMany(line.slice(201), 'b', 60_000);
    const before = await recordsOf(line[0]!);
    expect(await requestsOf(async () => (got = await store.acquireFirst(line, 'd', 5000)))).toEqual(
      {
        multi: 1,
        ...look(256),
      },
    );
    expect(got).toBeNull();
    expect(await recordsOf(line[0]!)).toEqual(before);
  });

  it('tokens keep rising per record across group grants, single grants, acquireFirst, release and expiry', async () => {
    const base = fresh();
    const pair = [`${base}/a`, `${base}/b`];
    const seen: Record<string, number[]> = { [pair[0]!]: [], [pair[1]!]: [] };
    const note = (leases: (Lease | null)[] | null): Lease[] => {
      const got = (leases ?? []).filter((l): l is Lease => l !== null);
      for (const l of got) seen[l.resource]!.push(l.token);
      return got;
    };
    await store.releaseMany(note(await store.acquireAll(pair, 'a', 5000)));
    const single = note([await store.tryAcquire(pair[0]!, 'a', 5000)]);
    const first = note([await store.acquireFirst(pair, 'b', 5000)]);
    expect(first[0]!.resource).toBe(pair[1]);
    await store.releaseMany([...single, ...first]);
    note(await store.acquireAll(pair, 'c', 300)); // never renewed: lapses on the server clock
    await sleep(500);
    note(await store.acquireAll(pair, 'd', 5000));
    note([await store.acquireFirst(pair, 'e', 5000)]); // both held: nothing
    expect(seen).toEqual({ [pair[0]!]: [1, 2, 3, 4], [pair[1]!]: [1, 2, 3, 4] });
    expect((await other.get(pair[0]!))!.token).toBe(4);
  });

  it('racing groups over crossing sets never hold a record twice; racing acquireFirst never grants more than the permits', async () => {
    const stores = await Promise.all(
      Array.from({ length: 4 }, () =>
        openZookeeper(parseStoreUrl(`${server.url}/groups?timeoutMs=3000`)),
      ),
    );
    opened.push(...stores);
    const ring = names(fresh(), 6);
    const groups = [
      [ring[0]!, ring[1]!, ring[2]!],
      [ring[2]!, ring[3]!, ring[4]!],
      [ring[4]!, ring[5]!, ring[0]!],
      [ring[5]!, ring[3]!, ring[1]!],
    ];
    const last = new Map<string, number>();
    for (let round = 0; round < 12; round++) {
      const granted = await Promise.all(
        stores.map((s, i) => s.acquireAll([...groups[i]!].reverse(), `w${i}`, 5000)),
      );
      const held = granted.flatMap((g) => g ?? []);
      expect(new Set(held.map((l) => l.resource)).size).toBe(held.length);
      for (const l of held) {
        expect(l.token).toBeGreaterThan(last.get(l.resource) ?? 0);
        last.set(l.resource, l.token);
      }
      await Promise.all(granted.map((g, i) => g && stores[i]!.releaseMany(g)));
    }
    expect(last.size).toBeGreaterThan(0);
    for (let round = 0; round < 8; round++) {
      const sem = permits(fresh(), 3);
      const callers = Array.from({ length: 6 }, (_, i) =>
        stores[i % 4]!.acquireFirst([...sem.slice(i % 3), ...sem.slice(0, i % 3)], `c${i}`, 5000),
      );
      const got = (await Promise.all(callers)).filter((l): l is Lease => l !== null);
      // Each permit is the first candidate of two callers, so each is granted, and to one only.
      expect(got).toHaveLength(3);
      expect(new Set(got.map((l) => l.resource)).size).toBe(got.length);
    }
  });

  it('a group whose operations could outgrow one ZooKeeper packet is taken member by member, whole', async () => {
    const base = fresh();
    // 100 names near 512 bytes, each character one ZooKeeper needs escaped (three bytes a piece).
    const group = Array.from(
      { length: 100 },
      (_, i) => `${base}/${String(i).padStart(3, '0')}${'\u0001'.repeat(500)}`,
    );
    let got: Lease[] | null = null;
    const counted = await requestsOf(async () => (got = await store.acquireAll(group, 'a', 5000)));
    expect(got).toHaveLength(100);
    expect(counted.multi).toBeGreaterThanOrEqual(100);
    expect((await other.get(group[99]!))!.owner).toBe('a');
  });

  it('a closed store refuses groups and acquireFirst with STORE_UNAVAILABLE', async () => {
    const closing = await openZookeeper(parseStoreUrl(`${server.url}/groups?timeoutMs=3000`));
    await closing.close();
    expect((await rejection(closing.acquireAll(['x', 'y'], 'a', 5000))).code).toBe(
      'STORE_UNAVAILABLE',
    );
    expect((await rejection(closing.acquireFirst(['x', 'y'], 'a', 5000))).code).toBe(
      'STORE_UNAVAILABLE',
    );
  });
});
