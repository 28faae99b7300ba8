import { Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS, openStore, type Lease, type LeaseStore } from '../../src/index.js';
import { permitResources } from '../../src/core/permits.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { RedisKeys } from '../../src/stores/redis/redis-keys.js';
import { waitFor } from '../harness/processes.js';
import { RedisCluster, RedisServer, redisUnavailable } from '../harness/redis-server.js';
import { describeServer } from '../harness/describe-server.js';
import { sleep } from '../harness/expect-error.js';
import * as ops from '../../src/stores/redis/redis-ops.js';
import { commandsOn, serverMs } from './redis-command-calls.js';

/** Loads every script of the store on `servers`, so no counted call meets NOSCRIPT. */
async function loadScripts(servers: readonly RedisServer[]): Promise<void> {
  const scripts = Object.values(ops).filter(
    (value): value is ops.Script => typeof value === 'object' && 'sha' in value,
  );
  for (const server of servers)
    for (const { lua } of scripts) await server.cli('script', 'load', lua);
}

/** A string of exactly `n` UTF-8 bytes, in 4- and 3-byte characters (ASCII for the rest). */
const utf8Of = (n: number): string => '🚀€'.repeat(Math.floor(n / 7)) + 'x'.repeat(n % 7);
const allBytes = (n: number): Uint8Array => new Uint8Array(n).map((_, i) => (i * 7) % 256);

interface Target {
  servers: () => readonly RedisServer[];
  open: (prefix: string) => Promise<LeaseStore>;
}

/** What the servers ran for `fn`: one EVALSHA and, inside it, exactly `inner`. */
async function oneScript<T>(
  target: Target,
  fn: () => Promise<T>,
  inner: Record<string, number>,
): Promise<T> {
  const { result, ran } = await commandsOn(target.servers(), fn);
  expect(ran).toEqual({ evalsha: 1, ...inner });
  return result;
}

/** Round trips and hand-overs that hold on every setup: one server or a cluster, either client. */
function dataSuite(target: Target): void {
  beforeAll(() => loadScripts(target.servers()));

  it('declares lease data', async () => {
    const store = await target.open('caps:');
    expect(store.capabilities.data).toBe(true);
  });

  it('writeData, renew with data and release with data are one script call each', async () => {
    const store = await target.open('rt:');
    const warm = (await store.tryAcquire('job', 'w', 5000))!;
    await store.writeData(warm, 'w');
    await store.release((await store.renew(warm, undefined, 'w'))!, 'w');

    const lease = (await oneScript(target, () => store.tryAcquire('job', 'a', 5000), {
      time: 1,
      hmget: 1,
      hset: 1,
    }))!;
    expect(lease.data).toBe('w');
    expect(await oneScript(target, () => store.writeData(lease, 'v1'), { hmget: 1, hset: 1 })).toBe(
      true,
    );
    expect(await oneScript(target, () => store.writeData(lease, null), { hmget: 1, hdel: 1 })).toBe(
      true,
    );
    const renewed = (await oneScript(target, () => store.renew(lease, 8000, 'v2'), {
      hmget: 1,
      time: 1,
      hset: 1,
    }))!;
    expect(renewed).toMatchObject({ token: lease.token, ttlMs: 8000, data: 'v2' });
    expect(renewed.expiresAt).toBeGreaterThanOrEqual(lease.expiresAt);
    const cleared = (await oneScript(target, () => store.renew(renewed, undefined, null), {
      hmget: 1,
      time: 1,
      hdel: 1,
      hset: 1,
    }))!;
    expect('data' in cleared).toBe(false);
    expect(
      await oneScript(target, () => store.release(cleared, 'v3'), {
        hmget: 1,
        publish: 1,
        hset: 1,
      }),
    ).toBe(true);
    expect(await store.get('job')).toEqual({
      resource: 'job',
      owner: '',
      token: lease.token,
      expiresAt: 0,
      data: 'v3',
    });
    // Refused (not ours any more): one call, nothing written.
    expect(await oneScript(target, () => store.writeData(lease, 'late'), { hmget: 1 })).toBe(false);
    expect(await oneScript(target, () => store.renew(lease, undefined, 'late'), { hmget: 1 })).toBe(
      null,
    );
    expect(await oneScript(target, () => store.release(lease, 'late'), { hmget: 1 })).toBe(false);
    expect((await store.get('job'))?.data).toBe('v3');
  });

  it('every grant after a release or an expiry returns the data in the call it already makes', async () => {
    const store = await target.open('grant:');
    const group = ['g/a', 'g/b', 'g/c'];
    for (const resource of group) {
      const lease = (await store.tryAcquire(resource, 'w', 5000))!;
      await store.release(lease, `left on ${resource}`);
    }
    const atomic = store.capabilities.atomicGroupMax >= group.length;
    // After a release.
    const single = (await oneScript(target, () => store.tryAcquire('g/a', 'a', 1000), {
      time: 1,
      hmget: 1,
      hset: 1,
    }))!;
    expect(single.data).toBe('left on g/a');
    const { result: many, ran: manyRan } = await commandsOn(target.servers(), () =>
      store.acquireMany(['g/b', 'g/a'], 'b', 5000),
    );
    // One script call per shard the names fall in, each running what it ran without data.
    expect(manyRan.hmget).toBe(2);
    expect(manyRan.hset).toBe(1);
    expect(manyRan.evalsha).toBeLessThanOrEqual(2);
    expect(many[0]!.lease?.data).toBe('left on g/b');
    expect(many[1]).toMatchObject({
      lease: null,
      holder: { owner: 'a', token: single.token, data: 'left on g/a' },
    });
    await store.release(many[0]!.lease!, 'b was here');
    // After an expiry: g/a lapsed, its data stays and goes to the next holder.
    await sleep(1100);
    if (atomic) {
      const all = (await oneScript(target, () => store.acquireAll(group, 'c', 150), {
        time: 1,
        hmget: 3,
        hset: 3,
      }))!;
      expect(all.map((l) => l.data)).toEqual(['left on g/a', 'b was here', 'left on g/c']);
      await sleep(250);
    }
    const permits = permitResources('sem', 3);
    for (const resource of permits) {
      const lease = (await store.tryAcquire(resource, 'w', 5000))!;
      await store.release(lease, resource === permits[1] ? new Uint8Array([0, 255]) : null);
    }
    await store.tryAcquire(permits[0]!, 'h', 60_000);
    const first = (await oneScript(target, () => store.acquireFirst(permits, 'd', 5000), {
      time: 1,
      hmget: 2,
      hset: 1,
    }))!;
    expect(first.resource).toBe(permits[1]);
    expect(first.data).toEqual(new Uint8Array([0, 255]));
    const bare = (await store.acquireFirst(permits, 'd', 5000))!;
    expect([bare.resource, 'data' in bare]).toEqual([permits[2], false]);
    const expired = (await store.acquireFirst(['g/a'], 'e', 5000))!;
    expect(expired.data).toBe('left on g/a');
  });

  it('coalesced grants (many callers at once) return each record its own data', async () => {
    const store = await target.open('co:');
    const resources = Array.from({ length: 40 }, (_, i) => `co/${i}`);
    const first = await store.acquireMany(resources, 'w', 5000);
    await Promise.all(
      first.map((o, i) => store.release(o.lease!, i % 3 === 0 ? null : `value ${i} with spaces`)),
    );
    const { result: grants, ran } = await commandsOn(target.servers(), () =>
      Promise.all(resources.map((r) => store.tryAcquire(r, 'a', 5000))),
    );
    // Sent together (one TRANSITIONS call per shard after the first), not one call each.
    expect((ran.evalsha ?? 0) + (ran.eval ?? 0)).toBeLessThan(resources.length);
    grants.forEach((lease, i) => {
      expect(lease).toMatchObject({ resource: resources[i], owner: 'a', token: 2 });
      expect(lease!.data ?? null).toBe(i % 3 === 0 ? null : `value ${i} with spaces`);
    });
    const refused = await Promise.all(resources.map((r) => store.tryAcquire(r, 'b', 5000)));
    expect(refused.every((l) => l === null)).toBe(true);
  });

  it('a value of exactly LIMITS.dataMaxBytes round-trips exactly, as UTF-8 text and as bytes', async () => {
    const store = await target.open('max:');
    const text = utf8Of(LIMITS.dataMaxBytes);
    expect(Buffer.byteLength(text)).toBe(LIMITS.dataMaxBytes);
    const bytes = allBytes(LIMITS.dataMaxBytes);
    for (const [resource, value] of [
      ['max/text', text],
      ['max/bytes', bytes],
    ] as const) {
      const lease = (await store.tryAcquire(resource, 'a', 5000))!;
      expect(await store.writeData(lease, value)).toBe(true);
      expect((await store.get(resource))?.data).toEqual(value);
      const [listed] = await store.list({ prefix: resource });
      expect(listed?.data).toEqual(value);
      const renewed = (await store.renew(lease, undefined, value))!;
      expect(await store.release(renewed, value)).toBe(true);
      const next = (await store.tryAcquire(resource, 'b', 5000))!;
      expect(next.data).toEqual(value);
      expect(typeof next.data).toBe(typeof value);
      if (typeof value !== 'string') expect(next.data).toBeInstanceOf(Uint8Array);
    }
  });

  it("a paused ex-holder's late writes after a takeover are refused, on another connection too", async () => {
    const store = await target.open('late:');
    const other = await target.open('late:');
    const old = (await store.tryAcquire('late/job', 'a', 150))!;
    expect(await store.writeData(old, 'a: checkpoint 1')).toBe(true);
    await sleep(250); // `a` is paused past its lease
    const next = (await other.tryAcquire('late/job', 'b', 60_000))!;
    expect(next).toMatchObject({ token: old.token + 1, data: 'a: checkpoint 1' });
    // `a` wakes and writes: every form is refused by the store's compare-and-set.
    expect(await store.writeData(old, 'a: late')).toBe(false);
    expect(await store.renew(old, undefined, 'a: late renew')).toBeNull();
    expect(await store.release(old, 'a: late release')).toBe(false);
    expect(await store.get('late/job')).toMatchObject({ owner: 'b', data: 'a: checkpoint 1' });
    expect(await other.writeData(next, 'b: checkpoint 2')).toBe(true);
    expect((await store.get('late/job'))?.data).toBe('b: checkpoint 2');
  });
}

describeServer('redis lease data on a single server', redisUnavailable(), () => {
  let server: RedisServer;
  const opened: LeaseStore[] = [];
  const nodeClients: { close(): Promise<unknown> }[] = [];
  const track = (store: LeaseStore): LeaseStore => {
    opened.push(store);
    return store;
  };
  const raw = (): Redis => new Redis(server.port, '127.0.0.1');

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.allSettled(opened.map((s) => s.close()));
    await Promise.allSettled(nodeClients.map((c) => c.close()));
    await server.stop();
  });

  describe('through ioredis', () => {
    dataSuite({
      servers: () => [server],
      open: async (prefix) => track(await openStore(`${server.url}?prefix=io-${prefix}`)),
    });
  });

  describe('through node-redis', () => {
    dataSuite({
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

  it('renewMany, renew and release without data neither send nor rewrite the data field', async () => {
    const store = track(await openStore(`${server.url}?prefix=mon:`));
    const names = Array.from({ length: 50 }, (_, i) => `m/${i}`);
    const leases = (await store.acquireMany(names, 'a', 60_000)).map((o) => o.lease!);
    const big = utf8Of(LIMITS.dataMaxBytes);
    await Promise.all(leases.map((l) => store.writeData(l, big)));
    await store.renew((await store.renewMany(leases.slice(0, 1)))[0]!); // scripts loaded

    const client = raw();
    const monitor = await client.monitor();
    const seen: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => seen.push(args));
    await sleep(50);
    const renewed = await store.renewMany(leases, 30_000);
    const one = (await store.renew(renewed[0]!))!;
    expect(await store.release(one)).toBe(true);
    expect(await store.releaseMany(renewed.slice(1).map((l) => l!))).toEqual(
      names.slice(1).map(() => true),
    );
    await waitFor('the monitor to see the last release', () =>
      seen.some((a) => a[0]?.toLowerCase() === 'publish' && a[2] === names.at(-1)),
    );
    monitor.disconnect();
    client.disconnect();

    const calls = seen.filter((a) => a[0]?.toLowerCase() !== 'ping');
    expect(calls.some((a) => a.some((arg) => arg.includes('🚀')))).toBe(false);
    const writes = calls.filter((a) => /^(hset|hdel|hsetnx|hmset|del|set)$/i.test(a[0]!));
    expect(writes.length).toBe(names.length + 1 + names.length); // one per renewal and release
    for (const write of writes) {
      expect(write[0]!.toLowerCase()).toBe('hset');
      expect(write.slice(2).filter((_, i) => i % 2 === 0)).not.toContain('data');
    }
    // Kept through it all, for the next holder.
    const records = await store.list({ prefix: 'm/' });
    expect(records.every((r) => r.owner === '' && r.data === big)).toBe(true);
  });

  it('renewing 10,000 leases costs the same bytes on the wire with 4 KiB of data each as without', async () => {
    const names = Array.from({ length: 10_000 }, (_, i) => `r/${String(i).padStart(5, '0')}`);
    const big = 'x'.repeat(LIMITS.dataMaxBytes);
    const bytes = async (): Promise<[number, number]> => {
      const info = await server.cli('info', 'stats');
      const read = (field: string): number =>
        Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(info)![1]);
      return [read('total_net_input_bytes'), read('total_net_output_bytes')];
    };
    const costs: [number, number][] = [];
    for (const prefix of ['wd:', 'nd:']) {
      const store = track(await openStore(`${server.url}?prefix=${prefix}`));
      const leases = (await store.acquireMany(names, 'a', 60_000)).map((o) => o.lease!);
      if (prefix === 'wd:') {
        for (let i = 0; i < leases.length; i += 500)
          await Promise.all(leases.slice(i, i + 500).map((l) => store.writeData(l, big)));
      }
      await store.renewMany(leases.slice(0, 1)); // loaded
      const before = await bytes();
      const renewed = await store.renewMany(leases, 30_000);
      const after = await bytes();
      expect(renewed.every((l) => l !== null && !('data' in l))).toBe(true);
      costs.push([after[0] - before[0], after[1] - before[1]]);
    }
    const [withData, without] = costs;
    // Same names, tokens and TTL: the requests are byte for byte the same length. The replies
    // differ only by the counting itself (INFO's own answer).
    expect(withData![0]).toBe(without![0]);
    expect(Math.abs(withData![1] - without![1])).toBeLessThan(256);
    expect(withData![0]).toBeLessThan(names.length * 100); // nowhere near 10,000 × 4 KiB
  });

  it('upgrade: a namespace written before lease data existed reads as no data and takes data from now on', async () => {
    const prefix = 'old:';
    const keys = new RedisKeys(prefix, 1);
    const now = await serverMs(server);
    // The records as the previous release wrote them: no data field, and its layout string.
    const client = raw();
    try {
      await client.set(keys.meta, 'leasehold-redis/1 shards=1');
      const records: [string, string, number, number][] = [
        ['held', 'old-a', 7, now + 60_000],
        ['released', '', 4, 0],
        ['lapsed', 'old-c', 2, now - 1000],
      ];
      for (const [resource, owner, token, expiresAt] of records) {
        await client.hset(keys.record(resource), { owner, token, expiresAt });
        await client.zadd(keys.index(0), 0, resource);
      }
    } finally {
      client.disconnect();
    }

    const store = track(await openStore(`${server.url}?prefix=${prefix}`));
    expect(await store.get('held')).toEqual({
      resource: 'held',
      owner: 'old-a',
      token: 7,
      expiresAt: now + 60_000,
    });
    const listed = await store.list();
    expect(listed.map((r) => [r.resource, 'data' in r])).toEqual([
      ['held', false],
      ['lapsed', false],
      ['released', false],
    ]);
    // The old holder keeps its lease and writes data under its token.
    const held: Lease = { resource: 'held', owner: 'old-a', token: 7, expiresAt: 0, ttlMs: 5000 };
    const renewed = (await store.renew(held))!;
    expect('data' in renewed).toBe(false);
    expect(await store.writeData(held, 'first data')).toBe(true);
    expect((await store.renew(held, undefined, 'second data'))?.data).toBe('second data');
    expect(await store.release(held, 'for the next')).toBe(true);
    // Old released and lapsed records are granted with no data, tokens going on from theirs.
    const released = (await store.tryAcquire('released', 'b', 5000))!;
    expect(released).toMatchObject({ token: 5 });
    expect('data' in released).toBe(false);
    const lapsed = await store.acquireMany(['lapsed', 'held'], 'c', 5000);
    expect(lapsed.map((o) => [o.lease?.token, o.lease?.data ?? null])).toEqual([
      [3, null],
      [8, 'for the next'],
    ]);
    expect(await store.release(released, new Uint8Array([1, 2, 3]))).toBe(true);
    expect((await store.acquireAll(['released'], 'd', 5000))![0]).toMatchObject({
      token: 6,
      data: new Uint8Array([1, 2, 3]),
    });
  });
});

describeServer('redis lease data on a 3-master cluster', redisUnavailable(), () => {
  let cluster: RedisCluster;
  const opened: LeaseStore[] = [];
  const nodeClients: { close(): Promise<unknown> }[] = [];
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
    await Promise.allSettled(nodeClients.map((c) => c.close()));
    await cluster.stop();
  });

  describe('16 shards through ioredis', () => {
    dataSuite({
      servers: () => cluster.nodes,
      open: async (prefix) => track(await openStore(url(`c16-${prefix}`))),
    });
  });

  describe('one shard through node-redis', () => {
    dataSuite({
      servers: () => cluster.nodes,
      open: async (prefix) => {
        const client = createCluster({
          rootNodes: cluster.seeds.map((seed) => ({ url: `redis://${seed}` })),
        });
        client.on('error', () => {});
        await client.connect();
        nodeClients.push(client);
        return track(await RedisStore.open(client, { prefix: `cn1-${prefix}`, shards: 1 }));
      },
    });
  });
});
