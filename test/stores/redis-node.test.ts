import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { openStore, RedisStore, type WatchEvent } from '../../src/index.js';
import { waitFor } from '../harness/processes.js';
import { RedisServer, redisUnavailable } from '../harness/redis-server.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';
import { commandsDuring } from './redis-command-calls.js';

type NodeClient = ReturnType<typeof createClient>;

describeServer('redis store on a node-redis client', redisUnavailable(), () => {
  let server: RedisServer;
  const cleanup: (() => Promise<unknown>)[] = [];

  /** A connected node-redis client of `target`, closed after the test. */
  async function nodeClient(target: RedisServer = server): Promise<NodeClient> {
    const client = createClient({ url: target.url });
    client.on('error', () => {}); // a paused or stopped server: commands fail by themselves
    await client.connect();
    cleanup.push(async () => client.destroy());
    return client;
  }

  async function open(prefix: string, client?: NodeClient): Promise<RedisStore> {
    const store = await RedisStore.open(client ?? (await nodeClient()), { prefix });
    cleanup.push(() => store.close());
    return store;
  }

  /** What the server ran for `fn`: one EVALSHA and, inside it, exactly `inner`. */
  async function sent<T>(fn: () => Promise<T>, inner: Record<string, number>): Promise<T> {
    const { result, ran } = await commandsDuring(server, fn);
    expect(ran).toEqual({ evalsha: 1, ...inner });
    return result;
  }

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });
  afterAll(async () => {
    await server.stop();
  });

  it('works on a connected client, shares records with an ioredis store, and leaves the client open', async () => {
    const client = await nodeClient();
    const store = await open('nr1:', client);
    const url = await openStore(`${server.url}?prefix=nr1:`);
    cleanup.push(() => url.close());

    const lease = (await store.tryAcquire('job', 'a', 5000))!;
    expect(lease).toMatchObject({ owner: 'a', token: 1 });
    expect(await url.get('job')).toMatchObject({ owner: 'a', token: 1 });
    expect(await url.tryAcquire('job', 'b', 5000)).toBeNull();
    expect(await url.release(lease)).toBe(true);
    expect(await store.tryAcquire('job', 'b', 5000)).toMatchObject({ owner: 'b', token: 2 });
    expect(await store.list()).toEqual([expect.objectContaining({ resource: 'job', owner: 'b' })]);

    await store.close();
    expect(await client.ping()).toBe('PONG');
  });

  it('tryAcquire, renew and release are one script call each', async () => {
    const store = await open('nr2:');
    await store.release((await store.renew((await store.tryAcquire('warm', 'w', 5000))!))!); // scripts loaded

    const lease = (await sent(() => store.tryAcquire('job', 'a', 5000), {
      time: 1,
      hmget: 1,
      zadd: 1,
      hset: 1,
    }))!;
    expect(lease).toMatchObject({ owner: 'a', token: 1 });
    const renewed = (await sent(() => store.renew(lease), { time: 1, hmget: 1, hset: 1 }))!;
    expect(renewed.expiresAt).toBeGreaterThanOrEqual(lease.expiresAt);
    expect(await sent(() => store.release(renewed), { hmget: 1, publish: 1, hset: 1 })).toBe(true);
    expect(
      await sent(() => store.tryAcquire('job', 'c', 5000), { time: 1, hmget: 1, hset: 1 }),
    ).toMatchObject({ owner: 'c', token: 2 });
    expect(await sent(() => store.release(lease), { hmget: 1 })).toBe(false);
  });

  it('acquireMany, renewMany and releaseMany of 1,000 are one script call each', async () => {
    const store = await open('nr3:');
    await store.releaseMany(
      await store
        .renewMany([(await store.tryAcquire('w', 'w', 5000))!])
        .then((leases) => leases.map((l) => l!)),
    );
    await store.acquireMany(['w'], 'w', 5000); // every script loaded
    const names = Array.from({ length: 1000 }, (_, i) => `job/${i}`);

    const acquired = await commandsDuring(server, () => store.acquireMany(names, 'a', 5000));
    expect(acquired.ran).toMatchObject({ evalsha: 1, time: 1, hset: 1000 });
    const leases = acquired.result.map((o) => o.lease!);
    expect(leases.every((l, i) => l.resource === names[i] && l.token === 1)).toBe(true);
    const renewed = await sent(() => store.renewMany(leases), { time: 1, hmget: 1000, hset: 1000 });
    expect(renewed.every((l, i) => l?.token === leases[i]!.token)).toBe(true);
    const released = await sent(() => store.releaseMany(leases), {
      hmget: 1000,
      publish: 1000,
      hset: 1000,
    });
    expect(released.every(Boolean)).toBe(true);
  });

  it('loads its scripts with EVAL when the server answers NOSCRIPT', async () => {
    const store = await open('nr4:');
    const lease = (await store.tryAcquire('job', 'a', 5000))!;
    expect(await server.cli('script', 'flush')).toBe('OK');
    const { result, ran } = await commandsDuring(server, () => store.renew(lease));
    expect(result).toMatchObject({ owner: 'a', token: 1 });
    expect(ran).toMatchObject({ evalsha: 1, eval: 1 });
    expect(await sent(() => store.renew(lease), { time: 1, hmget: 1, hset: 1 })).not.toBeNull();
  });

  it('decodes tokens exactly up to 2^53 − 1', async () => {
    const store = await open('nr5:');
    await store.release((await store.tryAcquire('job', 'a', 5000))!);
    await server.cli('hset', 'nr5:{0}r:job', 'token', String(Number.MAX_SAFE_INTEGER - 1));
    const lease = (await store.tryAcquire('job', 'a', 5000))!;
    expect(lease.token).toBe(Number.MAX_SAFE_INTEGER);
    expect(await store.renew(lease)).toMatchObject({ token: Number.MAX_SAFE_INTEGER });
    expect(await store.get('job')).toMatchObject({ token: Number.MAX_SAFE_INTEGER });
    expect(await store.release(lease)).toBe(true);
  });

  it('many callers at once: the first asked of each pair wins, in fewer script calls than callers', async () => {
    const store = await open('nr6:');
    const names = Array.from({ length: 32 }, (_, i) => `r${i}`);
    const { result, ran } = await commandsDuring(server, () =>
      Promise.all(
        names.flatMap((r) => [
          store.tryAcquire(r, `a-${r}`, 5000),
          store.tryAcquire(r, `b-${r}`, 5000),
        ]),
      ),
    );
    names.forEach((r, i) => {
      expect(result[2 * i]).toMatchObject({ resource: r, owner: `a-${r}`, token: 1 });
      expect(result[2 * i + 1]).toBeNull();
    });
    expect((ran.evalsha ?? 0) + (ran.eval ?? 0)).toBeLessThan(names.length);
    const released = await Promise.all(
      result.filter((l) => l !== null).map((l) => store.release(l)),
    );
    expect(released).toEqual(names.map(() => true));
  });

  it('wakes watchers on release through a duplicated connection, closed with the last watcher', async () => {
    const watcher = await open('nr7:');
    const other = await open('nr7:');
    const connections = async (): Promise<number> =>
      (await server.cli('client', 'list')).trim().split('\n').length;
    const before = await connections();
    const seen: WatchEvent[] = [];
    const unwatch = watcher.watch('jobs/', (e) => seen.push(e));
    await unwatch.ready;
    expect(await connections()).toBe(before + 1);

    const job = (await other.tryAcquire('jobs/1', 'b', 5000))!;
    const elsewhere = (await other.tryAcquire('other/1', 'b', 5000))!;
    expect(await other.releaseMany([elsewhere, job])).toEqual([true, true]);
    await waitFor('the release of jobs/1', () => seen.length === 1);
    expect(seen).toEqual([{ type: 'released', resource: 'jobs/1' }]);

    unwatch();
    await waitFor('the subscriber to disconnect', async () => (await connections()) === before);
  });

  it('refuses a client that is not connected, saying so', async () => {
    const client = createClient({ url: server.url });
    const error = await rejection(RedisStore.open(client, { prefix: 'nr8:' }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain('connect()');
  });

  it('a paused server gives STORE_UNAVAILABLE within commandTimeoutMs, then works again', async () => {
    const paused = await RedisServer.start();
    cleanup.push(() => paused.stop());
    const store = await RedisStore.open(await nodeClient(paused), {
      prefix: 'nr9:',
      commandTimeoutMs: 300,
    });
    cleanup.push(() => store.close());
    const lease = (await store.tryAcquire('job', 'a', 5000))!;

    paused.pause();
    try {
      const error = await rejection(store.renew(lease), 5000); // a hang fails the test
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.retryable).toBe(true);
    } finally {
      paused.resume();
    }
    await sleep(50);
    await waitFor('the store to answer again', async () => (await store.renew(lease)) !== null);
    expect(await store.get('job')).toMatchObject({ owner: 'a', token: 1 });
  });
});
