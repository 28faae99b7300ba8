import { createClient, createCluster } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LeaseError,
  LIMITS,
  openStore,
  type Lease,
  type LeaseRecord,
  type LeaseStore,
  type WatchEvent,
} from '../../src/index.js';
import { permitResources } from '../../src/core/permits.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { fnv1a } from '../../src/stores/redis/redis-keys.js';
import { waitFor } from '../harness/processes.js';
import { RedisCluster, RedisServer, redisUnavailable } from '../harness/redis-server.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';
import { commandCalls } from './redis-command-calls.js';

/** The 256 places of a fair line on `name`, as the client names them. */
const slots = (name: string): string[] =>
  Array.from({ length: 256 }, (_, i) => `${name}\u0001queue=${String(i).padStart(3, '0')}`);
const names = (base: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${base}/${i}`);

/** What the servers (one, or every cluster master) ran for `fn`, by command, `INFO` left out. */
async function ranOn<T>(
  servers: readonly RedisServer[],
  fn: () => Promise<T>,
): Promise<{ result: T; ran: Record<string, number> }> {
  const total = async (): Promise<Map<string, number>> => {
    const sum = new Map<string, number>();
    for (const calls of await Promise.all(servers.map(commandCalls)))
      for (const [name, count] of calls) sum.set(name, (sum.get(name) ?? 0) + count);
    return sum;
  };
  const before = await total();
  const result = await fn();
  const ran: Record<string, number> = {};
  for (const [name, count] of await total()) {
    const delta = count - (before.get(name) ?? 0);
    // INFO is the counting itself; CLUSTER calls are the drivers' own slot refreshes.
    if (delta > 0 && name !== 'info' && !name.startsWith('cluster')) ran[name] = delta;
  }
  return { result, ran };
}

const scripts = (ran: Record<string, number>): number => (ran.evalsha ?? 0) + (ran.eval ?? 0);

/** Every record under `prefix` with its token: what a refused call must leave as it was. */
const snapshot = async (store: LeaseStore, prefix: string): Promise<LeaseRecord[]> =>
  store.list({ prefix, limit: 1000 });

interface Target {
  servers: () => readonly RedisServer[];
  open: (prefix: string) => Promise<LeaseStore>;
}

/**
 * What holds wherever one script reaches every record (a single server, a cluster namespace of
 * one shard): groups up to `LIMITS.groupMaxSize` and candidate lists are one script call each.
 */
function oneCallSuite(target: Target): void {
  it('declares atomic groups up to LIMITS.groupMaxSize', async () => {
    const store = await target.open('caps:');
    expect(store.capabilities).toEqual({
      clock: 'store',
      batch: true,
      watch: true,
      atomicGroupMax: LIMITS.groupMaxSize,
      data: true,
      ordered: true,
    });
  });

  it('acquireAll of 2, 10 and atomicGroupMax members is one script call, granted or refused', async () => {
    const store = await target.open('rt1:');
    await store.release((await store.acquireAll(['warm/a', 'warm/b'], 'w', 5000))![0]!); // loaded
    for (const n of [2, 10, store.capabilities.atomicGroupMax]) {
      const group = names(`g${n}`, n);
      const granted = await ranOn(target.servers(), () => store.acquireAll(group, 'a', 5000));
      expect(granted.ran).toEqual({ evalsha: 1, time: 1, hmget: n, zadd: n, hset: n });
      expect(granted.result!.map((l) => [l.resource, l.owner, l.token])).toEqual(
        group.map((r) => [r, 'a', 1]),
      );
      expect(new Set(granted.result!.map((l) => l.expiresAt)).size).toBe(1); // one clock reading

      // Refused by its last member: every record read, nothing written.
      const crossing = [...names(`free${n}`, n - 1), group[n - 1]!];
      const refused = await ranOn(target.servers(), () => store.acquireAll(crossing, 'b', 5000));
      expect(refused.result).toBeNull();
      expect(refused.ran).toEqual({ evalsha: 1, time: 1, hmget: n });

      // Taken again after a release: the index is touched only for new records.
      await store.releaseMany(granted.result!);
      const again = await ranOn(target.servers(), () => store.acquireAll(group, 'c', 5000));
      expect(again.ran).toEqual({ evalsha: 1, time: 1, hmget: n, hset: n });
      expect(again.result!.every((l) => l.token === 2)).toBe(true);
    }
  });

  it('acquireFirst over 5 permits and over 256 fair-line slots is one script call, free or not', async () => {
    const store = await target.open('rt2:');
    await store.acquireFirst(['warm', 'warm2'], 'w', 5000); // loaded
    for (const candidates of [permitResources('job', 5), slots('job')]) {
      const n = candidates.length;
      await store.acquireMany(candidates.slice(0, n - 1), 'h', 60_000);
      const free = await ranOn(target.servers(), () => store.acquireFirst(candidates, 'a', 5000));
      expect(free.result).toMatchObject({ resource: candidates[n - 1], owner: 'a', token: 1 });
      expect(free.ran).toEqual({ evalsha: 1, time: 1, hmget: n, zadd: 1, hset: 1 });
      const none = await ranOn(target.servers(), () => store.acquireFirst(candidates, 'b', 5000));
      expect(none.result).toBeNull();
      expect(none.ran).toEqual({ evalsha: 1, time: 1, hmget: n });
      // The first free one in the order given is taken, and only it.
      await store.release(free.result!);
      const held = await store.get(candidates[1]!);
      await store.release({ resource: held!.resource, owner: 'h', token: held!.token });
      const first = await store.acquireFirst(candidates, 'c', 5000);
      expect(first).toMatchObject({ resource: candidates[1], owner: 'c', token: 2 });
      expect(await store.get(candidates[n - 1]!)).toMatchObject({ owner: '', token: 1 });
    }
  });

  it('a refused group writes nothing: records, tokens and the index stay as they were', async () => {
    const store = await target.open('nw1:');
    const held = (await store.tryAcquire('m/2', 'x', 60_000))!;
    const released = (await store.tryAcquire('m/1', 'y', 5000))!;
    await store.release(released);
    await store.tryAcquire('m/0', 'z', 150);
    await sleep(250); // m/0 lapsed: free, but the group is refused on m/2
    const before = await snapshot(store, 'm/');
    expect(await store.acquireAll(['m/0', 'm/1', 'm/new', 'm/2', 'm/3'], 'a', 5000)).toBeNull();
    expect(await snapshot(store, 'm/')).toEqual(before);
    expect(await store.get('m/new')).toBeNull();
    expect(await store.get('m/3')).toBeNull();
    // The refusal burnt no token: the next grants go on from the tokens before it.
    await store.release(held);
    const leases = (await store.acquireAll(['m/0', 'm/1', 'm/new', 'm/2'], 'a', 5000))!;
    expect(leases.map((l) => l.token)).toEqual([2, 2, 1, 2]);
  });

  it('a record that is not a lease fails the group as RECORD_INVALID, and nothing is written', async () => {
    const store = await target.open('bad2:');
    const outcomes = await store.acquireMany(['b/0', 'b/1', 'b/2'], 'a', 60_000);
    await store.releaseMany(outcomes.map((o) => o.lease!));
    // b/1 no longer holds a lease's expiry (its key found by scanning the namespace).
    const pattern = `${(store as RedisStore).prefix}*r:b/1`;
    for (const node of target.servers()) {
      const found = await node.cli('--scan', '--pattern', pattern);
      if (found) await node.cli('hset', found, 'expiresAt', 'soon');
    }
    // list meets b/1 too: the healthy members are read one by one.
    const healthy = (): Promise<unknown> => Promise.all(['b/0', 'b/2'].map((r) => store.get(r)));
    const before = await healthy();
    expect((await rejection(snapshot(store, 'b/'))).code).toBe('RECORD_INVALID');
    for (const [operation, call] of [
      ['acquireAll', () => store.acquireAll(['b/0', 'b/1', 'b/2'], 'c', 5000)],
      ['acquireFirst', () => store.acquireFirst(['b/1', 'b/2'], 'c', 5000)],
    ] as const) {
      const error = await rejection(call());
      expect(error, operation).toBeInstanceOf(LeaseError);
      expect(error.code).toBe('RECORD_INVALID');
      expect(error.resource).toBe('b/1');
      expect(error.retryable).toBe(false);
    }
    expect(await healthy()).toEqual(before);
  });

  it('tokens keep rising per record across group grants, single grants, releases and expiry', async () => {
    const store = await target.open('tok1:');
    const group = ['t/a', 't/b', 't/c'];
    const permits = permitResources('t/p', 3);
    const last = new Map<string, number>();
    const saw = (lease: Lease | null): void => {
      expect(lease).not.toBeNull();
      expect(lease!.token).toBeGreaterThan(last.get(lease!.resource) ?? 0);
      last.set(lease!.resource, lease!.token);
    };
    for (let round = 0; round < 3; round++) {
      const leases = (await store.acquireAll(group, 'a', 5000))!;
      leases.forEach(saw);
      await store.releaseMany(leases);
      const single = await store.tryAcquire('t/b', 'b', 150);
      saw(single);
      const first = await store.acquireFirst(permits, 'c', 150);
      saw(first);
      await sleep(250); // t/b and the permit lapse
      const lapsed = (await store.acquireAll(['t/b', first!.resource], 'd', 5000))!;
      lapsed.forEach(saw);
      await store.releaseMany(lapsed);
      const again = await store.acquireFirst([first!.resource], 'e', 5000);
      saw(again);
      await store.release(again!);
    }
    for (const record of await snapshot(store, 't/'))
      if (last.has(record.resource)) expect(record.token).toBe(last.get(record.resource));
  });

  it('racing groups over crossing sets never hold a record twice', async () => {
    const stores = await Promise.all(Array.from({ length: 4 }, () => target.open('race1:')));
    const sets = [
      ['x/0', 'x/1', 'x/2'],
      ['x/2', 'x/3', 'x/4'],
      ['x/4', 'x/5', 'x/0'],
      ['x/5', 'x/3', 'x/1'],
      ['x/1', 'x/4'],
      ['x/3', 'x/0'],
    ];
    for (let round = 0; round < 20; round++) {
      const results = await Promise.all(
        sets.map((set, i) => stores[i % stores.length]!.acquireAll(set, `o${i}`, 5000)),
      );
      const held = new Map<string, string>();
      results.forEach((leases, i) => {
        for (const lease of leases ?? []) {
          expect(held.has(lease.resource), `${lease.resource} held twice`).toBe(false);
          held.set(lease.resource, `o${i}`);
        }
      });
      expect(held.size).toBeGreaterThan(0);
      for (const [resource, owner] of held)
        expect(await stores[0]!.get(resource)).toMatchObject({ owner });
      await stores[0]!.releaseMany(results.flatMap((leases) => leases ?? []));
    }
  });

  it('racing acquireFirst over the same permits never grants more than N', async () => {
    const stores = await Promise.all(Array.from({ length: 3 }, () => target.open('race2:')));
    for (let round = 0; round < 20; round++) {
      const permits = permitResources(`sem${round}`, 3);
      const grants = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          stores[i % stores.length]!.acquireFirst([...permits].reverse(), `c${i}`, 5000),
        ),
      );
      const granted = grants.filter((g) => g !== null);
      expect(granted).toHaveLength(3);
      expect(new Set(granted.map((g) => g.resource)).size).toBe(3);
      for (const lease of granted)
        expect(await stores[0]!.get(lease.resource)).toMatchObject({
          owner: lease.owner,
          token: 1,
        });
    }
  });

  it('acquireFirst calls asked together go as one script with the other transitions, each exact', async () => {
    const store = await target.open('cofirst:');
    const permits = permitResources('cof', 3);
    const old = (await store.acquireFirst(permits, 'old', 5000))!;
    expect(await store.release(old, 'left by old')).toBe(true);
    const held = (await store.tryAcquire('cof/other', 'h', 5000))!;
    const { result, ran } = await ranOn(target.servers(), () =>
      Promise.all([
        store.tryAcquire('cof/warm', 'w', 5000), // on the wire first: the rest wait for it
        ...Array.from({ length: 6 }, (_, i) => store.acquireFirst(permits, `c${i}`, 5000)),
        store.release(held),
        store.tryAcquire('cof/other', 'late', 5000),
      ]),
    );
    expect(scripts(ran)).toBeLessThan(9);
    const grants = result.slice(1, 7) as (Lease | null)[];
    // Applied in the order asked: the first three callers take the three permits, in order.
    expect(grants.map((g) => g?.resource ?? null)).toEqual([...permits, null, null, null]);
    expect(grants.slice(0, 3).map((g) => [g!.owner, g!.token])).toEqual([
      ['c0', 2],
      ['c1', 1],
      ['c2', 1],
    ]);
    expect(grants[0]!.data).toBe('left by old');
    expect('data' in grants[1]!).toBe(false);
    expect(result[7]).toBe(true);
    expect(result[8]).toMatchObject({ resource: 'cof/other', owner: 'late', token: 2 });
    for (const g of grants.slice(0, 3))
      expect(await store.get(g!.resource)).toMatchObject({ owner: g!.owner, token: g!.token });
  });

  it('a group granted in one call is released member by member with a release event each', async () => {
    const watcher = await target.open('ev1:');
    const store = await target.open('ev1:');
    const seen: WatchEvent[] = [];
    const unwatch = watcher.watch!('e/', (e) => seen.push(e));
    await (unwatch as unknown as { ready: Promise<void> }).ready;
    const leases = (await store.acquireAll(['e/0', 'e/1', 'e/2'], 'a', 5000))!;
    const permit = (await store.acquireFirst(permitResources('e/p', 2), 'a', 5000))!;
    expect(await store.renewMany([...leases, permit])).toHaveLength(4);
    expect(await store.releaseMany([...leases, permit])).toEqual([true, true, true, true]);
    await waitFor('four release events', () => seen.length === 4);
    expect(seen.map((e) => e.resource).sort()).toEqual(['e/0', 'e/1', 'e/2', 'e/p'].sort());
    unwatch();
  });
}

describeServer('redis groups and permits on a single server', redisUnavailable(), () => {
  let server: RedisServer;
  const opened: LeaseStore[] = [];
  const nodeClients: ReturnType<typeof createClient>[] = [];
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.allSettled(opened.map((s) => s.close()));
    await Promise.allSettled(nodeClients.map((c) => c.close()));
    await server.stop();
  });
  const track = (store: LeaseStore): LeaseStore => {
    opened.push(store);
    return store;
  };

  describe('through ioredis', () => {
    oneCallSuite({
      servers: () => [server],
      open: async (prefix) => track(await openStore(`${server.url}?prefix=io-${prefix}`)),
    });
  });

  describe('through node-redis', () => {
    oneCallSuite({
      servers: () => [server],
      open: async (prefix) => {
        const client = createClient({ url: server.url });
        client.on('error', () => {});
        await client.connect();
        nodeClients.push(client);
        return track(await RedisStore.open(client, { prefix: `nr-${prefix}` }));
      },
    });
  });

  describe('through ioredis, 4 shards on one server', () => {
    oneCallSuite({
      servers: () => [server],
      open: async (prefix) => track(await openStore(`${server.url}?prefix=s4-${prefix}&shards=4`)),
    });
  });

  it('fails a group on a paused server with STORE_UNAVAILABLE by the command deadline', async () => {
    const store = track(await openStore(`${server.url}?prefix=pause1:&commandTimeoutMs=300`));
    await store.acquireAll(['w/0', 'w/1'], 'w', 5000);
    server.pause();
    try {
      for (const call of [
        () => store.acquireAll(['p/0', 'p/1'], 'a', 5000),
        () => store.acquireFirst(permitResources('p', 3), 'a', 5000),
      ]) {
        // Settled while the server is still paused, by the command deadline (the message says so).
        const error = await rejection(call());
        expect(error.code).toBe('STORE_UNAVAILABLE');
        expect(error.retryable).toBe(true);
        expect(error.message).toMatch(/no answer within (300 ms|commandTimeoutMs)/);
      }
    } finally {
      server.resume();
    }
  });

  it('lays out a new sharded namespace by name family, and keeps reading one laid out by whole names', async () => {
    const fresh = track(await openStore(`${server.url}?prefix=lay1:&shards=4`));
    await fresh.acquireFirst(permitResources('job', 3), 'a', 5000);
    expect(await server.cli('get', 'lay1:meta')).toBe('leasehold-redis/2 shards=4');
    const one = track(await openStore(`${server.url}?prefix=lay2:`));
    await one.tryAcquire('job', 'a', 5000);
    expect(await server.cli('get', 'lay2:meta')).toBe('leasehold-redis/1 shards=1');

    // A namespace the previous release laid out over 4 shards, a permit record at its whole-name place.
    const permit = 'job\u0001permit=2';
    const shard = fnv1a(Buffer.from(permit)) % 4;
    const family = fnv1a(Buffer.from('job')) % 4;
    expect(shard).not.toBe(family); // else this test would not tell the placements apart
    await server.cli('set', 'old4:meta', 'leasehold-redis/1 shards=4');
    await server.cli(
      'hset',
      `old4:{${shard}}r:${permit}`,
      'owner',
      'b',
      'token',
      '7',
      'expiresAt',
      '0',
    );
    await server.cli('zadd', `old4:{${shard}}index`, '0', permit);
    const old = track(await openStore(`${server.url}?prefix=old4:&shards=4`));
    expect(await server.cli('get', 'old4:meta')).toBe('leasehold-redis/1 shards=4');
    expect(await old.get(permit)).toEqual({ resource: permit, owner: 'b', token: 7, expiresAt: 0 });
    expect(await old.list()).toHaveLength(1);
    const taken = await old.acquireFirst(['job', permit], 'c', 5000);
    expect(taken).toMatchObject({ resource: 'job', token: 1 });
    const next = await old.acquireFirst(['job', permit], 'd', 5000);
    expect(next).toMatchObject({ resource: permit, owner: 'd', token: 8 });
    expect(await server.cli('hget', `old4:{${shard}}r:${permit}`, 'owner')).toBe('d');
  });
});

describeServer('redis groups and permits on a 3-master cluster', redisUnavailable(), () => {
  let cluster: RedisCluster;
  const opened: LeaseStore[] = [];
  const url = (prefix: string, extra = ''): string => {
    const [first, ...rest] = cluster.seeds;
    return `redis://${first}?cluster=${rest.join(',')}&prefix=${prefix}${extra}`;
  };
  const track = (store: LeaseStore): LeaseStore => {
    opened.push(store);
    return store;
  };
  beforeAll(async () => {
    cluster = await RedisCluster.start();
  });
  afterAll(async () => {
    await Promise.allSettled(opened.map((s) => s.close()));
    await cluster.stop();
  });

  describe('one shard', () => {
    oneCallSuite({
      servers: () => cluster.nodes,
      open: async (prefix) => track(await openStore(url(`c1-${prefix}`, '&shards=1'))),
    });
  });

  it('16 shards: groups go member by member; acquireFirst over permits or fair slots of one name is one call', async () => {
    const store = track(await openStore(url('c16:')));
    expect(store.capabilities.atomicGroupMax).toBe(0);
    for (const name of ['job', 'other/name', 'é🚀']) {
      // The master of the name's shard loads the script first, so no call below meets NOSCRIPT.
      await store.acquireFirst([`${name}\u0001warm`], 'w', 5000);
      for (const candidates of [permitResources(name, 5), slots(name)]) {
        const n = candidates.length;
        await store.acquireMany(candidates.slice(0, n - 1), 'h', 60_000);
        const free = await ranOn(cluster.nodes, () => store.acquireFirst(candidates, 'a', 5000));
        expect(free.result).toMatchObject({ resource: candidates[n - 1], owner: 'a' });
        expect(free.ran).toEqual({ evalsha: 1, time: 1, hmget: n, zadd: 1, hset: 1 });
        const none = await ranOn(cluster.nodes, () => store.acquireFirst(candidates, 'b', 5000));
        expect(none.result).toBeNull();
        expect(none.ran).toEqual({ evalsha: 1, time: 1, hmget: n });
      }
    }
    // A group of names in other shards: one script call per member, and a refused one gives back.
    const group = names('grp', 10);
    for (const member of group) await store.release((await store.tryAcquire(member, 'w', 5000))!);
    const granted = await ranOn(cluster.nodes, () => store.acquireAll(group, 'a', 5000));
    expect(granted.result).toHaveLength(10);
    expect(scripts(granted.ran)).toBe(10);
    const before = await snapshot(store, 'grp/');
    const crossing = [...names('grp2', 5), group[3]!];
    expect(await store.acquireAll(crossing, 'b', 5000)).toBeNull();
    expect(await snapshot(store, 'grp/')).toEqual(before);
  });

  it('16 shards: candidates of many names cost one call per shard they fall in, first free taken', async () => {
    const store = track(await openStore(url('c16b:')));
    const candidates = names('any', 12);
    const shards = new Set(candidates.map((r) => fnv1a(Buffer.from(r)) % 16)).size;
    for (const c of candidates) await store.release((await store.acquireFirst([c], 'w', 5000))!);
    await store.acquireMany(candidates, 'h', 60_000);
    const none = await ranOn(cluster.nodes, () => store.acquireFirst(candidates, 'a', 5000));
    expect(none.result).toBeNull();
    expect(scripts(none.ran)).toBe(shards);
    const first = (await store.get(candidates[0]!))!;
    await store.release({ ...first, owner: 'h' });
    const one = await ranOn(cluster.nodes, () => store.acquireFirst(candidates, 'a', 5000));
    expect(one.result).toMatchObject({ resource: candidates[0], token: 3 });
    expect(scripts(one.ran)).toBe(1);
  });

  it('16 shards through a node-redis cluster: permits in one call, racing callers never over N', async () => {
    const client = createCluster({
      rootNodes: cluster.seeds.map((seed) => ({ url: `redis://${seed}` })),
    });
    client.on('error', () => {});
    await client.connect();
    try {
      const store = await RedisStore.open(client, { prefix: 'c16n:' });
      const other = track(await openStore(url('c16n:')));
      const permits = permitResources('sem', 3);
      await store.acquireFirst(permits, 'w', 5000).then((l) => store.release(l!));
      const one = await ranOn(cluster.nodes, () => store.acquireFirst(permits, 'a', 5000));
      expect(one.result).toMatchObject({ resource: 'sem', token: 2 });
      expect(scripts(one.ran)).toBe(1);
      await store.release(one.result!);
      for (let round = 0; round < 10; round++) {
        const grants = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            (i % 2 ? store : other).acquireFirst(permits, `c${i}`, 5000),
          ),
        );
        const granted = grants.filter((g) => g !== null);
        expect(granted).toHaveLength(3);
        expect(new Set(granted.map((g) => g.resource)).size).toBe(3);
        await other.releaseMany(granted);
      }
      await store.close();
    } finally {
      await client.close();
    }
  });
});
