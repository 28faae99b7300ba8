import { createRequire } from 'node:module';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LIMITS, type Lease, type LeaseStore } from '../../src/index.js';
import { parseStoreUrl } from '../../src/core/store-url.js';
import { openZookeeper } from '../../src/stores/zookeeper/open.js';
import type { ZkClient, ZkModule, ZkStat } from '../../src/stores/zookeeper/zookeeper-driver.js';
import { describeServer } from '../harness/describe-server.js';
import { sleep } from '../harness/expect-error.js';
import { countingRelay } from '../harness/zookeeper-relay.js';
import { ZookeeperServer, zookeeperUnavailable } from '../harness/zookeeper-server.js';

/** A string of exactly `n` UTF-8 bytes, mostly 3-byte characters. */
const utf8Of = (n: number): string => '€'.repeat(Math.floor(n / 3)) + 'x'.repeat(n % 3);
const bytesOf = (n: number): Uint8Array => new Uint8Array(n).map((_, i) => (i * 7) % 256);
const names = (base: string, count: number): string[] =>
  Array.from({ length: count }, (_, i) => `${base}/${String(i).padStart(4, '0')}`);

describeServer('zookeeper store: lease data', zookeeperUnavailable(), () => {
  let server: ZookeeperServer;
  let relay: Awaited<ReturnType<typeof countingRelay>>;
  /** Through the counting relay. */
  let store: LeaseStore;
  /** Straight to the server, on sessions of its own. */
  let other: LeaseStore;
  /** A bare driver client, to read znodes and write the layout of the current release. */
  let raw: ZkClient;
  const zk = createRequire(import.meta.url)('node-zookeeper-client') as ZkModule;
  const chroot = '/zdata';
  let n = 0;
  const fresh = (): string => `d${++n}`;

  beforeAll(async () => {
    server = await ZookeeperServer.start();
    relay = await countingRelay(server.clientPort);
    store = await openZookeeper(
      parseStoreUrl(`zookeeper://127.0.0.1:${relay.port}${chroot}?timeoutMs=3000`),
    );
    other = await openZookeeper(parseStoreUrl(`${server.url}${chroot}?timeoutMs=3000`));
    // Sessions are opened on first use of a TTL: open them before anything is counted.
    for (const s of [store, other]) {
      for (const ttl of [1000, 5000]) await s.release((await s.tryAcquire('warm', 'w', ttl))!);
    }
    raw = zk.createClient(server.endpoint, { sessionTimeout: 10_000, spinDelay: 100, retries: 0 });
    await new Promise<void>((resolve) => {
      raw.on('connected', resolve);
      raw.connect();
    });
  }, 30_000);
  afterAll(async () => {
    raw?.close();
    await Promise.allSettled([store?.close(), other?.close()]);
    await relay?.close();
    await server?.stop();
  });

  /** The requests `work` made reach the server through `store`, by type. */
  const requestsOf = async (work: () => Promise<unknown>): Promise<Record<string, number>> => {
    relay.counts.clear();
    await work();
    return Object.fromEntries([...relay.counts].sort());
  };
  const path = (resource: string): string => `${chroot}/r/${resource.replaceAll('/', '%2F')}`;
  /** The data znode of `resource`: its version and mzxid, or undefined when there is none. */
  const dataZnode = (resource: string): Promise<string | undefined> =>
    new Promise((resolve, reject) =>
      raw.exists(`${path(resource)}/t/d`, undefined, (error, stat) =>
        error
          ? reject(error)
          : resolve(
              stat
                ? `${stat.version}@${(stat as ZkStat & { mzxid: Buffer }).mzxid.toString('hex')}`
                : undefined,
            ),
      ),
    );
  const rawData = (p: string): Promise<Buffer> =>
    new Promise((resolve, reject) =>
      raw.getData(p, undefined, (error, data) => (error ? reject(error) : resolve(data!))),
    );

  it('declares lease data; writeData, renew and release with data are one multi each', async () => {
    const r = fresh();
    expect(store.capabilities.data).toBe(true);
    let lease = (await store.tryAcquire(r, 'a', 5000))!;
    expect(lease).not.toHaveProperty('data');
    // Created, written, written with a renewal, then a release that clears it: one multi each.
    expect(await requestsOf(() => store.writeData(lease, 'w1'))).toEqual({ multi: 1 });
    expect(await dataZnode(r)).toMatch(/^0@/);
    expect((await rawData(`${path(r)}/t/d`)).toString()).toBe('sw1');
    expect(await requestsOf(() => store.writeData(lease, 'w2'))).toEqual({ multi: 1 });
    expect(await dataZnode(r)).toMatch(/^1@/);
    let renewed: Lease | null = null;
    expect(await requestsOf(async () => (renewed = await store.renew(lease, 5000, 'r1')))).toEqual({
      multi: 1,
    });
    lease = renewed!;
    expect(lease).toMatchObject({ token: 1, data: 'r1' });
    expect(await other.get(r)).toMatchObject({ owner: 'a', token: 1, data: 'r1' });
    expect(await requestsOf(() => store.release(lease, null))).toEqual({ multi: 1 });
    expect(await dataZnode(r)).toBeUndefined();
    expect(await other.get(r)).toEqual({ resource: r, owner: '', token: 1, expiresAt: 0 });
    // A lease this store did not grant: its znodes read first, as renew reads them.
    const theirs = (await other.tryAcquire(r, 'b', 5000))!;
    expect(await requestsOf(() => store.writeData(theirs, bytesOf(3)))).toEqual({
      exists: 2,
      getData: 1,
      multi: 1,
    });
    expect(await store.release(theirs, 'from b')).toBe(true);
    expect(await other.get(r)).toMatchObject({ owner: '', data: 'from b' });
  });

  it('a grant hands the data over with one read after its multi, only where there is data', async () => {
    const base = fresh();
    const group = names(base, 3);
    const first = (await other.acquireMany(group, 'a', 1000)).map((o) => o.lease!);
    await other.writeData(first[0]!, 'v0');
    await other.writeData(first[1]!, 'v1');
    await other.release(first[0]!, 'released');
    await other.release(first[2]!);
    // Released with data: the multi, and one read of the data znode.
    let got: Lease | null = null;
    expect(
      await requestsOf(async () => (got = await store.tryAcquire(group[0]!, 'b', 5000))),
    ).toEqual({ getData: 1, multi: 1 });
    expect(got).toMatchObject({ owner: 'b', token: 2, data: 'released' });
    // Released without data: the multi alone, as before lease data.
    expect(
      await requestsOf(async () => (got = await store.tryAcquire(group[2]!, 'b', 5000))),
    ).toEqual({ multi: 1 });
    expect(got).not.toHaveProperty('data');
    // Lapsed (its holder's session lives on): the take-over's look and multi, then the data read.
    await sleep(1000 + 300);
    expect(
      await requestsOf(async () => (got = await store.tryAcquire(group[1]!, 'b', 5000))),
    ).toEqual({ exists: 2, getData: 2, multi: 2, setData: 1 });
    expect(got).toMatchObject({ token: 2, data: 'v1' });
    const held = [group[0]!, group[1]!, group[2]!];
    await store.releaseMany((await Promise.all(held.map((r) => store.get(r)))).map((l) => l!));
    let taken: Lease[] | null = null;
    expect(
      await requestsOf(async () => (taken = await store.acquireAll(group, 'c', 5000))),
    ).toEqual({ getData: 2, multi: 1 });
    expect(taken!.map((l) => l.data ?? null)).toEqual(['released', 'v1', null]);
    await store.releaseMany(taken!);
    let many: Awaited<ReturnType<typeof store.acquireMany>> = [];
    expect(
      await requestsOf(async () => (many = await store.acquireMany(group, 'c', 5000))),
    ).toEqual({ exists: 6, getData: 2, multi: 1 });
    expect(many.map((o) => o.lease?.data ?? null)).toEqual(['released', 'v1', null]);
    await store.releaseMany(many.map((o) => o.lease!));
    expect(await store.acquireFirst([group[1]!], 'd', 5000)).toMatchObject({ data: 'v1' });
  });

  it('renewMany without data neither sends nor rewrites the data znode: 4 KiB of data each costs nothing', async () => {
    const count = 300;
    const base = fresh();
    const plain = (await store.acquireMany(names(`${base}p`, count), 'a', 5000)).map(
      (o) => o.lease!,
    );
    const loaded = (await store.acquireMany(names(`${base}f`, count), 'a', 5000)).map(
      (o) => o.lease!,
    );
    const big = utf8Of(LIMITS.dataMaxBytes);
    for (const lease of loaded) expect(await store.writeData(lease, big)).toBe(true);
    const before = await Promise.all(loaded.map((l) => dataZnode(l.resource)));
    const bytesOfWork = async (work: () => Promise<unknown>): Promise<number> => {
      relay.sent.bytes = 0;
      await work();
      return relay.sent.bytes;
    };
    const without = await bytesOfWork(() => store.renewMany(plain));
    let renewed: (Lease | null)[] = [];
    const withData = await bytesOfWork(async () => (renewed = await store.renewMany(loaded)));
    expect(renewed.every((l) => l !== null)).toBe(true);
    expect(await requestsOf(() => store.renewMany(loaded))).toEqual({ multi: 1 });
    // The same requests (names of the same length), whatever the records hold.
    expect(withData).toBe(without);
    expect(withData).toBeLessThan((count * LIMITS.dataMaxBytes) / 8);
    expect(await Promise.all(loaded.map((l) => dataZnode(l.resource)))).toEqual(before);
    await store.releaseMany(loaded);
    expect(await Promise.all(loaded.map((l) => dataZnode(l.resource)))).toEqual(before);
    expect((await other.get(loaded[0]!.resource))?.data).toBe(big);
  });

  it('a value of exactly LIMITS.dataMaxBytes round-trips exactly, as multi-byte UTF-8 and as bytes', async () => {
    const r = fresh();
    const text = utf8Of(LIMITS.dataMaxBytes);
    expect(Buffer.byteLength(text)).toBe(LIMITS.dataMaxBytes);
    const bytes = bytesOf(LIMITS.dataMaxBytes);
    const lease = (await store.tryAcquire(r, 'a', 5000))!;
    expect(await store.writeData(lease, text)).toBe(true);
    // Kept in ZooKeeper's own bytes: one type byte, then the UTF-8 (no base64).
    expect((await rawData(`${path(r)}/t/d`)).length).toBe(1 + LIMITS.dataMaxBytes);
    expect((await other.get(r))?.data).toBe(text);
    expect(await store.release(lease, bytes)).toBe(true);
    const [listed] = await other.list({ prefix: r });
    expect(listed?.data).toEqual(bytes);
    expect(listed?.data).toBeInstanceOf(Uint8Array);
    const next = (await other.tryAcquire(r, 'b', 5000))!;
    expect(Buffer.from(next.data as Uint8Array).equals(Buffer.from(bytes))).toBe(true);
    expect((await other.renew(next, undefined, text))?.data).toBe(text);
    expect((await store.get(r))?.data).toBe(text);
  });

  it("a paused ex-holder's writes after the takeover are refused, leaving the data as it was", async () => {
    const r = fresh();
    const old = (await store.tryAcquire(r, 'a', 1000))!;
    expect(await store.writeData(old, 'a1')).toBe(true);
    // The holder pauses past its TTL (its session lives on); another process takes the record.
    await sleep(1000 + 300);
    const next = (await other.tryAcquire(r, 'b', 5000))!;
    expect(next).toMatchObject({ token: 2, data: 'a1' });
    // What the ex-holder's store remembers is refused by the server, and the reads show it over.
    expect(await store.writeData(old, 'late')).toBe(false);
    expect(await store.renew(old, undefined, 'late renew')).toBeNull();
    expect(await store.release(old, 'late release')).toBe(false);
    expect(await other.get(r)).toMatchObject({ owner: 'b', token: 2, data: 'a1' });
    expect(await other.writeData(next, 'b1')).toBe(true);
    expect((await store.get(r))?.data).toBe('b1');
  });

  it('records written before lease data existed read without data, and take every transition', async () => {
    const held = fresh();
    const released = fresh();
    const create = (p: string, data: string, mode: number): Promise<void> =>
      new Promise((resolve, reject) => {
        const tx = raw.transaction();
        tx.create(p, Buffer.from(data), mode);
        tx.commit((error) => (error ? reject(error) : resolve()));
      });
    const bump = (p: string): Promise<void> =>
      new Promise((resolve, reject) =>
        raw.setData(p, Buffer.alloc(0), -1, (error) => (error ? reject(error) : resolve())),
      );
    // The current release's layout, written with the driver: a record znode, a token znode at
    // version 1, and a hold on a session of its own for the held one.
    await create(path(held), '{"o":"a","t":5000}', zk.CreateMode.PERSISTENT);
    await create(`${path(held)}/t`, '', zk.CreateMode.PERSISTENT);
    await bump(`${path(held)}/t`);
    await create(`${path(held)}/h`, 'a', zk.CreateMode.EPHEMERAL);
    await create(path(released), '{"o":"","t":0}', zk.CreateMode.PERSISTENT);
    await create(`${path(released)}/t`, '', zk.CreateMode.PERSISTENT);
    await bump(`${path(released)}/t`);

    const found = await store.get(held);
    expect(found).toMatchObject({ resource: held, owner: 'a', token: 1 });
    expect(found).not.toHaveProperty('data');
    expect(await store.get(released)).toEqual({
      resource: released,
      owner: '',
      token: 1,
      expiresAt: 0,
    });
    // The old holder goes on through this store: renew, write data, renew and release with data.
    const lease = { ...found!, ttlMs: 5000 };
    const mine = (await store.renew(lease))!;
    expect(mine).toMatchObject({ token: 1 });
    expect(await store.writeData(mine, 'held 1')).toBe(true);
    const again = (await store.renew(mine, undefined, 'held 2'))!;
    expect(await store.release(again, 'held 3')).toBe(true);
    // New holders take both over, and are handed the data; the old released one takes data too.
    const got = await other.acquireMany([held, released], 'b', 5000);
    expect(got.map((o) => [o.lease?.token, o.lease?.data ?? null])).toEqual([
      [2, 'held 3'],
      [2, null],
    ]);
    expect(await other.writeData(got[1]!.lease!, 'released 1')).toBe(true);
    expect((await store.get(released))?.data).toBe('released 1');
  });
});
