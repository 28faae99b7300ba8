import { Cluster } from 'ioredis';
import { createCluster } from 'redis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, type LeaseStore } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { RedisKeys } from '../../src/stores/redis/redis-keys.js';
import { waitFor } from '../harness/processes.js';
import { RedisCluster, redisUnavailable } from '../harness/redis-server.js';
import { describeServer } from '../harness/describe-server.js';
import { scriptCalls } from './redis-command-calls.js';

describeServer('redis store on a 3-master cluster', redisUnavailable(), () => {
  let cluster: RedisCluster;
  const opened: LeaseStore[] = [];
  const open = async (prefix: string): Promise<RedisStore> => {
    const [first, ...rest] = cluster.seeds;
    const store = await openStore(`redis://${first}?cluster=${rest.join(',')}&prefix=${prefix}`);
    opened.push(store);
    return store as RedisStore;
  };

  beforeAll(async () => {
    cluster = await RedisCluster.start();
  });
  afterAll(async () => {
    await Promise.allSettled(opened.map((s) => s.close()));
    await cluster.stop();
  });

  it('spreads leases over every master; batches and list still answer in order', async () => {
    const store = await open('spread:');
    const leases = [];
    for (let i = 0; i < 48; i++) leases.push((await store.tryAcquire(`r/${i}`, 'a', 5000))!);
    const sizes = await Promise.all(cluster.nodes.map((n) => n.cli('dbsize')));
    expect(sizes.map(Number).every((n) => n > 0)).toBe(true);

    const reversed = [...leases].reverse();
    const renewed = await store.renewMany(reversed);
    expect(renewed.map((r) => r?.resource)).toEqual(reversed.map((l) => l.resource));
    const names = (await store.list({ prefix: 'r/' })).map((r) => r.resource);
    expect(names).toEqual(leases.map((l) => l.resource).sort());
  });

  it('a single lease costs one script call on one master, whichever shard it is in', async () => {
    const store = await open('one:');
    const calls = async (): Promise<number> =>
      (await Promise.all(cluster.nodes.map(scriptCalls))).reduce((a, b) => a + b, 0);
    const keys = new RedisKeys('one:', 16);
    const perShard = new Map<number, string[]>();
    for (let i = 0; [...perShard.values()].filter((n) => n.length === 2).length < 16; i++) {
      const names = perShard.get(keys.shardOf(`job/${i}`)) ?? [];
      if (names.length < 2) perShard.set(keys.shardOf(`job/${i}`), [...names, `job/${i}`]);
    }
    // The first name of each shard loads the scripts on its master, so no call below meets NOSCRIPT.
    for (const [warm] of perShard.values())
      await store.release((await store.renew((await store.tryAcquire(warm!, 'w', 5000))!))!);

    for (const [, name] of perShard.values()) {
      let before = await calls();
      const lease = (await store.tryAcquire(name!, 'a', 5000))!;
      expect((await calls()) - before).toBe(1);
      before = await calls();
      expect(await store.renew(lease)).toMatchObject({ resource: name, token: 1 });
      expect((await calls()) - before).toBe(1);
      before = await calls();
      expect(await store.release(lease)).toBe(true);
      expect((await calls()) - before).toBe(1);
    }
    expect(await store.list({ prefix: 'job/' })).toHaveLength(32);
  });

  it('acquireMany is one script call per shard across the masters, holders included', async () => {
    const store = await open('many:');
    const names = Array.from({ length: 1000 }, (_, i) => `m/${i}`);
    const warm = await store.acquireMany(names.slice(0, 200), 'w', 60_000); // loads the script everywhere
    const calls = async (): Promise<number> =>
      (await Promise.all(cluster.nodes.map(scriptCalls))).reduce((a, b) => a + b, 0);

    const before = await calls();
    const outcomes = await store.acquireMany(names, 'a', 5000);
    expect((await calls()) - before).toBe(16);
    expect(outcomes.map((o) => o.resource)).toEqual(names);
    outcomes.slice(0, 200).forEach((o, i) => {
      expect(o.lease).toBeNull();
      expect(o.holder).toEqual({
        resource: o.resource,
        owner: 'w',
        token: 1,
        expiresAt: warm[i]!.lease!.expiresAt,
      });
    });
    expect(outcomes.slice(200).every((o) => o.lease?.owner === 'a' && o.lease.token === 1)).toBe(
      true,
    );
    const page = await store.list({ prefix: 'm/', after: 'm/998', limit: 3 });
    expect(page.map((r) => r.resource)).toEqual(['m/999']);
  });

  it('works on a node-redis cluster it was given: 16 shards like a URL-opened store, releases watched', async () => {
    const client = createCluster({
      rootNodes: cluster.seeds.map((seed) => ({ url: `redis://${seed}` })),
    });
    client.on('error', () => {}); // failures reach the store's calls
    await client.connect();
    try {
      const store = await RedisStore.open(client, { prefix: 'node:' });
      const url = await open('node:'); // refuses to open unless the layout (16 shards) matches
      const seen: string[] = [];
      const unwatch = store.watch('job/', (e) => seen.push(e.resource));
      await unwatch.ready;

      const leases = [];
      for (let i = 0; i < 24; i++) leases.push((await store.tryAcquire(`job/${i}`, 'a', 5000))!);
      expect(await url.get('job/7')).toMatchObject({ owner: 'a', token: 1 });
      const renewed = await store.renewMany([...leases].reverse());
      expect(renewed.map((l) => l?.resource)).toEqual([...leases].reverse().map((l) => l.resource));
      const outcomes = await store.acquireMany(['job/0', 'more/0'], 'b', 5000);
      expect(outcomes.map((o) => o.lease?.owner ?? o.holder?.owner)).toEqual(['a', 'b']);
      expect(await url.releaseMany(leases)).toEqual(leases.map(() => true));
      await waitFor('24 releases', () => seen.length === 24);
      expect((await store.list({ prefix: 'job/' })).every((r) => r.owner === '')).toBe(true);
      unwatch();
      await store.close();
    } finally {
      await client.close();
    }
  });

  it('works on an ioredis Cluster it was given, laid out like a URL-opened store', async () => {
    const client = new Cluster(cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })));
    try {
      const store = await RedisStore.open(client, { prefix: 'given:' });
      const url = await open('given:');
      const lease = await store.tryAcquire('job', 'a', 5000);
      expect(await url.get('job')).toMatchObject({ owner: 'a', token: lease!.token });
      await store.close();
    } finally {
      client.disconnect();
    }
  });
});
