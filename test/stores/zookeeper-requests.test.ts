import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Lease, LeaseStore } from '../../src/index.js';
import { parseStoreUrl } from '../../src/core/store-url.js';
import { openZookeeper } from '../../src/stores/zookeeper/open.js';
import { describeServer } from '../harness/describe-server.js';
import { ZookeeperServer, zookeeperUnavailable } from '../harness/zookeeper-server.js';
import { countingRelay } from '../harness/zookeeper-relay.js';
import { waitFor } from '../harness/processes.js';

describeServer('zookeeper store requests', zookeeperUnavailable(), () => {
  let server: ZookeeperServer;
  let relay: Awaited<ReturnType<typeof countingRelay>>;
  let store: LeaseStore;
  let other: LeaseStore;

  beforeAll(async () => {
    server = await ZookeeperServer.start();
    relay = await countingRelay(server.clientPort);
    store = await openZookeeper(
      parseStoreUrl(`zookeeper://127.0.0.1:${relay.port}/requests?timeoutMs=3000`),
    );
    other = await openZookeeper(parseStoreUrl(`${server.url}/requests?timeoutMs=3000`));
  }, 30_000);
  afterAll(async () => {
    await Promise.allSettled([store?.close(), other?.close()]);
    await relay?.close();
    await server?.stop();
  });

  /** The requests `work` made reach the server, by type. */
  const requestsOf = async (work: () => Promise<unknown>): Promise<Record<string, number>> => {
    await work(); // sessions are opened on first use: count a second, warm run
    relay.counts.clear();
    await work();
    return Object.fromEntries([...relay.counts].sort());
  };

  it('acquire of a free resource is one multi; of a resource never acquired, two', async () => {
    let n = 0;
    expect(
      await requestsOf(async () => {
        const lease = await other.tryAcquire(`free/${n}`, 'o', 5000);
        await other.release(lease!);
        expect(await store.tryAcquire(`free/${n++}`, 'a', 5000)).not.toBeNull();
      }),
    ).toEqual({ multi: 1 });
    expect(await requestsOf(() => store.tryAcquire(`fresh/${n++}`, 'a', 5000))).toEqual({
      multi: 2,
    });
  });

  it('acquire of a live lease: the refused multi, one clock write and three reads', async () => {
    await other.tryAcquire('held', 'o', 60_000);
    expect(
      await requestsOf(async () => expect(await store.tryAcquire('held', 'a', 5000)).toBeNull()),
    ).toEqual({ exists: 2, getData: 1, multi: 1, setData: 1 });
  });

  it('renew and release of a lease this store granted: one multi each, no reads', async () => {
    const lease = (await store.tryAcquire('rr', 'a', 5000))!;
    expect(await requestsOf(() => store.renew(lease))).toEqual({ multi: 1 });
    // A renewal with a longer TTL moves the hold onto another session, in the same multi.
    relay.counts.clear();
    const longer = (await store.renew(lease, 10_000))!;
    expect(longer).toMatchObject({ owner: 'a', token: lease.token, ttlMs: 10_000 });
    expect(Object.fromEntries(relay.counts)).toEqual({ multi: 1 });
    let n = 0;
    expect(
      await requestsOf(async () => {
        const own = (await store.tryAcquire(`rel/${n++}`, 'a', 5000))!;
        relay.counts.clear();
        expect(await store.release(own)).toBe(true);
      }),
    ).toEqual({ multi: 1 });
    expect(await other.get(`rel/${n - 1}`)).toMatchObject({ owner: '', expiresAt: 0 });
  });

  it('a lease granted through another store: three reads sent together, then one multi', async () => {
    let n = 0;
    expect(
      await requestsOf(async () => {
        const lease = (await other.tryAcquire(`elsewhere/${++n}`, 'a', 5000))!;
        relay.counts.clear();
        expect(await store.renew(lease)).toMatchObject({ owner: 'a', token: lease.token });
      }),
    ).toEqual({ exists: 2, getData: 1, multi: 1 });
    // Renewed here once, the lease is this store's to write: the next renewals need no reads.
    const record = (await other.get(`elsewhere/${n}`))!;
    expect(await requestsOf(() => store.renew({ ...record, ttlMs: 5000 }))).toEqual({ multi: 1 });
    expect(
      await requestsOf(async () => {
        const lease = (await other.tryAcquire(`elsewhere/${++n}`, 'a', 5000))!;
        relay.counts.clear();
        expect(await store.release(lease)).toBe(true);
      }),
    ).toEqual({ exists: 2, getData: 1, multi: 1 });
  });

  it('the multi of a remembered lease is refused when its record changed: read, then settled', async () => {
    let n = 0;
    // Renewed through another store since: the refused multi, the reads, and the multi they allow.
    expect(
      await requestsOf(async () => {
        const lease = (await store.tryAcquire(`changed/${n++}`, 'a', 5000))!;
        expect(await other.renew(lease)).not.toBeNull();
        relay.counts.clear();
        expect(await store.renew(lease)).toMatchObject({ owner: 'a', token: lease.token });
      }),
    ).toEqual({ exists: 2, getData: 1, multi: 2 });
    expect(
      await requestsOf(async () => {
        const lease = (await store.tryAcquire(`changed/${n++}`, 'a', 5000))!;
        expect(await other.renew(lease)).not.toBeNull();
        relay.counts.clear();
        expect(await store.release(lease)).toBe(true);
      }),
    ).toEqual({ exists: 2, getData: 1, multi: 2 });
    // Released through another store: the multi alone tells the grant is over, and the store
    // forgets it (what it is asked about it next is read).
    expect(
      await requestsOf(async () => {
        const lease = (await store.tryAcquire(`changed/${n++}`, 'a', 5000))!;
        expect(await other.release(lease)).toBe(true);
        relay.counts.clear();
        expect(await store.renew(lease)).toBeNull();
        expect(Object.fromEntries(relay.counts)).toEqual({ multi: 1 });
        expect(await store.release(lease)).toBe(false);
      }),
    ).toEqual({ exists: 2, getData: 1, multi: 1 });
  });

  it('a stale token or a forged owner changes nothing: refused in the multi or by the reads', async () => {
    // Lapsed and taken over through another store: the record was written since, the multi is
    // refused, and the reads show the grant over; it is forgotten, so what is asked next is read.
    const old = (await store.tryAcquire('stale', 'a', 400))!;
    await new Promise((resolve) => setTimeout(resolve, 700));
    const taken = (await other.tryAcquire('stale', 'b', 5000))!;
    expect(taken.token).toBe(old.token + 1);
    relay.counts.clear();
    expect(await store.release(old)).toBe(false);
    expect(Object.fromEntries(relay.counts)).toEqual({ multi: 1, exists: 2, getData: 1 });
    relay.counts.clear();
    expect(await store.renew(old)).toBeNull();
    expect(Object.fromEntries(relay.counts)).toEqual({ exists: 2, getData: 1 });
    expect(await other.get('stale')).toMatchObject({ owner: 'b', token: taken.token });
    // The right token with another owner is not the lease this store granted: it is read, and
    // nothing is written.
    const lease = (await store.tryAcquire('forged', 'a', 5000))!;
    const before = await other.get('forged');
    const forged = { ...lease, owner: 'mallory' };
    relay.counts.clear();
    expect(await store.renew(forged)).toBeNull();
    expect(await store.release(forged)).toBe(false);
    expect(Object.fromEntries(relay.counts)).toEqual({ exists: 4, getData: 2 });
    expect(await other.get('forged')).toEqual(before);
    // ...and the real lease is still remembered: its renewal is the one multi.
    relay.counts.clear();
    expect(await store.renew(lease)).toMatchObject({ owner: 'a', token: lease.token });
    expect(Object.fromEntries(relay.counts)).toEqual({ multi: 1 });
  });

  it('batches: one multi for all their writes, whatever their size', async () => {
    const n = 200;
    let round = 0;
    let leases: Lease[] = [];
    const acquire = async (): Promise<void> => {
      const names = Array.from({ length: n }, (_, i) => `batch/${round}/${i}`);
      round++;
      const outcomes = await store.acquireMany(names, 'a', 5000);
      leases = outcomes.map((o) => o.lease!);
    };
    // Never acquired: one listing of the records tells the batch it has none, then one multi.
    expect(await requestsOf(acquire)).toEqual({ exists: 1, getChildren: 1, multi: 1 });
    // Granted here: renew and release write without reading.
    expect(await requestsOf(() => store.renewMany(leases))).toEqual({ multi: 1 });
    relay.counts.clear();
    expect(await store.releaseMany(leases)).toEqual(leases.map(() => true));
    expect(Object.fromEntries(relay.counts)).toEqual({ multi: 1 });
    // Granted through another store: the reads of each, sent together, then one multi.
    const names = Array.from({ length: n }, (_, i) => `batch/other/${i}`);
    const elsewhere = (await other.acquireMany(names, 'a', 5000)).map((o) => o.lease!);
    relay.counts.clear();
    expect((await store.renewMany(elsewhere)).every((l) => l !== null)).toBe(true);
    expect(Object.fromEntries(relay.counts)).toEqual({ exists: 2 * n, getData: n, multi: 1 });
  });

  it('a batch reads each resource instead of listing when it is small, or the namespace much larger', async () => {
    const fresh = (tag: string, count: number): string[] =>
      Array.from({ length: count }, (_, i) => `sized/${tag}/${i}`);
    // Under 64 resources: two reads each.
    relay.counts.clear();
    await store.acquireMany(fresh('small', 63), 'a', 5000);
    expect(Object.fromEntries(relay.counts)).toEqual({ exists: 2 * 63, multi: 1 });
    // A listed batch whose resources exist (released): their reads, then its multis (256 KB each).
    const names = fresh('again', 64 * 20);
    const leases = (await other.acquireMany(names, 'o', 5000)).map((o) => o.lease!);
    await other.releaseMany(leases);
    relay.counts.clear();
    const outcomes = await store.acquireMany(names, 'a', 5000);
    expect(outcomes.every((o) => o.lease?.owner === 'a')).toBe(true);
    expect(outcomes.map((o) => o.lease!.token)).toEqual(leases.map((l) => l.token + 1));
    const { multi, ...reads } = Object.fromEntries(relay.counts);
    expect(reads).toEqual({ exists: 1 + 2 * names.length, getChildren: 1 });
    expect(multi).toBeGreaterThanOrEqual(1);
    // 64 resources in a namespace of more than 16 records each: the child count, then two reads each.
    const records = (await other.list({ limit: 100_000 })).length;
    expect(records).toBeGreaterThan(64 * 16);
    relay.counts.clear();
    await store.acquireMany(fresh('wide', 64), 'a', 5000);
    expect(Object.fromEntries(relay.counts)).toEqual({ exists: 1 + 2 * 64, multi: 1 });
  });

  it('get is two reads; a list page is one listing and two reads per record', async () => {
    expect(await requestsOf(() => store.get('held'))).toEqual({ exists: 1, getData: 1 });
    expect(await requestsOf(() => store.list({ prefix: 'rel/', limit: 2 }))).toEqual({
      exists: 2,
      getChildren: 1,
      getData: 2,
    });
  });

  it('a burst of 600 first acquires is watched with one listing of the records at a time, and none is missed', async () => {
    const events = new Map<string, string[]>();
    const watching = store as LeaseStore & { watch: NonNullable<LeaseStore['watch']> };
    const unwatch = watching.watch('burst/', (event) =>
      events.set(event.resource, [...(events.get(event.resource) ?? []), event.type]),
    );
    await (unwatch as unknown as { ready: Promise<void> }).ready;
    relay.inFlightMax.clear();
    relay.counts.clear();
    // 60 batches of 10 new resources, 20 in flight at once: every batch adds children.
    const names = Array.from({ length: 600 }, (_, i) => `burst/${i}`);
    const leases: Lease[] = [];
    for (let i = 0; i < 60; i += 20)
      await Promise.all(
        Array.from({ length: 20 }, async (_, j) => {
          const batch = names.slice((i + j) * 10, (i + j + 1) * 10);
          for (const o of await other.acquireMany(batch, 'o', 60_000)) leases.push(o.lease!);
        }),
      );
    await other.releaseMany(leases);
    await waitFor(
      'a release of each of the 600',
      () => names.every((r) => events.get(r)?.includes('released')),
      20_000,
    );
    expect(relay.inFlightMax.get('getChildren')).toBe(1);
    expect(relay.counts.get('getChildren')).toBeLessThanOrEqual(60);
    unwatch();
  });
});
