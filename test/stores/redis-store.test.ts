import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseError, openStore, type LeaseStore, type WatchEvent } from '../../src/index.js';
import { RedisStore, type RedisClient } from '../../src/stores/redis/index.js';
import { waitFor } from '../harness/processes.js';
import { RedisServer, redisUnavailable } from '../harness/redis-server.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';
import { commandCalls, scriptCalls, serverMs } from './redis-command-calls.js';

describe('redis store URLs', () => {
  it.each([
    ['redis://u:pw1@127.0.0.1:1?prefix=a{b}', 'prefix'],
    ['redis://u:pw1@127.0.0.1:1?prefix=a*', 'prefix'],
    ['redis://u:pw1@127.0.0.1:1?prefx=x', 'prefx'],
    ['redis://u:pw1@127.0.0.1:1/abc', 'database'],
    ['redis://u:pw1@127.0.0.1:1/2?cluster=yes', 'database 0'],
    ['redis://u:pw1@127.0.0.1:1?cluster=nohost', 'host:port'],
    ['redis://u:pw1@127.0.0.1:1?connectTimeoutMs=soon', 'connectTimeoutMs'],
    ['redis:127.0.0.1:6379', 'redis://'],
  ])('%s is refused, naming %s, without the password', async (url, field) => {
    const error = await rejection(openStore(url));
    expect(error.code).toBe('STORE_URL_INVALID');
    expect(error.message).toContain(field);
    expect(error.message).not.toContain('pw1');
  });

  it('refuses bad options given in code', () => {
    const client = {} as never;
    expect(() => new RedisStore(client, { prefix: 'has space' })).toThrow(/prefix/);
    expect(() => new RedisStore(client, { shards: 0 })).toThrow(/shards/);
    expect(() => new RedisStore(client, { commandTimeoutMs: 1.5 })).toThrow(/commandTimeoutMs/);
  });
});

describeServer('redis store', redisUnavailable(), () => {
  let server: RedisServer;
  const opened: LeaseStore[] = [];
  const openUrl = async (url: string): Promise<LeaseStore> => {
    const store = await openStore(url);
    opened.push(store);
    return store;
  };
  const open = (params: string): Promise<LeaseStore> => openUrl(`${server.url}?${params}`);

  /** Runs `fn` and checks what the server ran for it: one EVALSHA and, inside it, exactly `inner`. */
  async function sent<T>(fn: () => Promise<T>, inner: Record<string, number>): Promise<T> {
    const before = await commandCalls(server);
    const result = await fn();
    const ran: Record<string, number> = {};
    for (const [name, count] of await commandCalls(server)) {
      const delta = count - (before.get(name) ?? 0);
      if (delta > 0 && name !== 'info') ran[name] = delta;
    }
    expect(ran).toEqual({ evalsha: 1, ...inner });
    return result;
  }

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.allSettled(opened.map((s) => s.close()));
    await server.stop();
  });

  it('keeps every key under the prefix, never expires a record, and keeps the token through expiry', async () => {
    const store = await open('prefix=app1:');
    await store.tryAcquire('job', 'a', 150);
    await sleep(250);
    expect(await store.get('job')).toMatchObject({ owner: 'a', token: 1 });
    expect(await server.cli('pttl', 'app1:{0}r:job')).toBe('-1');
    const keys = (await server.cli('--scan', '--pattern', 'app1*')).split('\n').sort();
    expect(keys).toEqual(['app1:meta', 'app1:{0}index', 'app1:{0}r:job']);
    expect(await store.tryAcquire('job', 'b', 5000)).toMatchObject({ owner: 'b', token: 2 });
  });

  it('many callers at once share script calls: every transition applied as on its own, in the order asked', async () => {
    const store = await open('prefix=coalesce:');
    const before = await scriptCalls(server);
    // 64 owners race for 32 resources, two owners per resource, all in flight at once.
    const names = Array.from({ length: 32 }, (_, i) => `r${i}`);
    const grants = await Promise.all(
      names.flatMap((r) => [
        store.tryAcquire(r, `a-${r}`, 5000),
        store.tryAcquire(r, `b-${r}`, 5000),
      ]),
    );
    for (let i = 0; i < names.length; i++) {
      // The first asked wins, the second is refused: the order within a shared call is kept.
      expect(grants[2 * i]).toMatchObject({ resource: names[i], owner: `a-${names[i]}`, token: 1 });
      expect(grants[2 * i + 1]).toBeNull();
    }
    // Releases (one by a stale token) asked together, then re-acquisitions asked together.
    const leases = grants.filter((g) => g !== null);
    const released = await Promise.all([
      ...leases.map((l) => store.release(l)),
      store.release({ ...leases[0]!, token: 99 }),
    ]);
    expect(released).toEqual([...new Array(32).fill(true), false]);
    const again = await Promise.all(names.map((r) => store.tryAcquire(r, `c-${r}`, 5000)));
    for (const [i, r] of names.entries())
      expect(again[i]).toMatchObject({ resource: r, owner: `c-${r}`, token: 2 });
    // 161 transitions; the first of each burst goes alone, the rest share calls.
    const calls = (await scriptCalls(server)) - before;
    expect(calls).toBeLessThan(20);
    expect(await store.list({ prefix: 'r' })).toHaveLength(32);
    const watched: WatchEvent[] = [];
    const unwatch = store.watch!('', (e) => watched.push(e));
    await (unwatch as unknown as { ready: Promise<void> }).ready;
    const held = (await Promise.all(names.map((r) => store.get(r)))).map((rec) => ({
      resource: rec!.resource,
      owner: rec!.owner,
      token: rec!.token,
    }));
    expect(await Promise.all(held.map((l) => store.release(l)))).toEqual(new Array(32).fill(true));
    await waitFor('32 release events', () => watched.length === 32);
    expect(watched.map((e) => e.resource).sort()).toEqual([...names].sort());
    unwatch();
  });

  it('loads its scripts again when the server forgot them (SCRIPT FLUSH, a restart, a new node)', async () => {
    const store = await open('prefix=app7:');
    const lease = (await store.tryAcquire('job', 'a', 5000))!;
    expect(await server.cli('script', 'flush')).toBe('OK');
    expect(await store.renew(lease)).toMatchObject({ token: 1 });
    expect(await store.list()).toHaveLength(1);
    expect(await server.cli('script', 'flush')).toBe('OK');
    const [outcome] = await store.acquireMany(['job2'], 'a', 5000);
    expect(outcome!.lease).toMatchObject({ resource: 'job2', token: 1 });
  });

  it('refuses to share a prefix between stores with different shard counts', async () => {
    const first = await open('prefix=app2:');
    await first.tryAcquire('job', 'a', 5000);
    const error = await rejection(open('prefix=app2:&shards=4'));
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('shards=1');
  });

  it('spreads a namespace over shards and still lists it in code-point order', async () => {
    const store = await open('prefix=app3:&shards=4');
    const names = ['b', 'a', 'é', 'Z', 'aa', '🚀', '\uffff', 'a%', 'a_'];
    for (const name of names) await store.tryAcquire(name, 'o', 5000);
    const keys = await server.cli('--scan', '--pattern', 'app3:{*}index');
    expect(keys.split('\n').length).toBeGreaterThan(1);
    expect((await store.list()).map((r) => r.resource)).toEqual([
      'Z',
      'a',
      'a%',
      'a_',
      'aa',
      'b',
      'é',
      '\uffff',
      '🚀',
    ]);
    expect((await store.list({ prefix: 'a', limit: 3 })).map((r) => r.resource)).toEqual([
      'a',
      'a%',
      'a_',
    ]);
  });

  it('logs in as an ACL user limited to its prefix, uses the database in the path, and keeps passwords out of errors', async () => {
    await server.cli('acl', 'setuser', 'lh', 'on', '>pw-good', '~app6:*', '&app6:*', '+@all');
    const store = await openUrl(`redis://lh:pw-good@127.0.0.1:${server.port}/3?prefix=app6:`);
    const lease = await store.tryAcquire('job', 'a', 5000);
    expect(await store.release(lease!)).toBe(true);
    expect(await server.cli('-n', '3', 'hget', 'app6:{0}r:job', 'token')).toBe('1');

    // Without the channel, a release fails before it writes anything.
    await server.cli('acl', 'setuser', 'mute', 'on', '>pw-mute', '~app6:*', '+@all');
    const mute = await openUrl(`redis://mute:pw-mute@127.0.0.1:${server.port}/3?prefix=app6:`);
    const held = (await mute.tryAcquire('job', 'b', 5000))!;
    const refused = await rejection(mute.release(held));
    expect(refused.retryable).toBe(false);
    expect(refused.message).toContain('&<prefix>');
    expect(await store.get('job')).toMatchObject({ owner: 'b', token: 2 });

    const wrong = await rejection(openStore(`redis://lh:pw-bad@127.0.0.1:${server.port}`));
    expect(wrong.code).toBe('STORE_UNAVAILABLE');
    expect(wrong.retryable).toBe(false);
    expect(wrong.message).toMatch(/WRONGPASS/);
    expect(wrong.message).not.toContain('pw-bad');
  });

  it('works on an ioredis client it was given, and leaves it open', async () => {
    const redis = new Redis({ host: '127.0.0.1', port: server.port });
    try {
      const store = await RedisStore.open(redis, { prefix: 'app4:' });
      const url = await open('prefix=app4:');
      const lease = await store.tryAcquire('job', 'a', 5000);
      expect(await url.get('job')).toMatchObject({ owner: 'a', token: lease!.token });
      await store.close();
      expect(await redis.ping()).toBe('PONG');
    } finally {
      redis.disconnect();
    }
  });

  it('tryAcquire, renew and release are one script call each, and only a new record touches the index', async () => {
    const store = await open('prefix=count3:');
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
    const again = await sent(() => store.tryAcquire('job', 'b', 5000), {
      time: 1,
      hmget: 1,
      hset: 1,
    });
    expect(again).toMatchObject({ owner: 'b', token: 2 });

    // Refused calls cost the same one call and write nothing; a refused renewal reads no clock.
    expect(await sent(() => store.tryAcquire('job', 'c', 5000), { time: 1, hmget: 1 })).toBeNull();
    expect(await sent(() => store.renew(lease), { hmget: 1 })).toBeNull();
    expect(await sent(() => store.release(lease), { hmget: 1 })).toBe(false);
    expect(await store.list()).toEqual([
      { resource: 'job', owner: 'b', token: 2, expiresAt: again!.expiresAt },
      { resource: 'warm', owner: '', token: 1, expiresAt: 0 },
    ]);
  });

  it('renewMany and releaseMany of 1,000 leases are one script call each', async () => {
    const store = await open('prefix=count4:');
    const warm = (await store.renewMany([(await store.tryAcquire('warm', 'w', 5000))!]))[0]!;
    await store.releaseMany([warm]); // scripts loaded
    const names = Array.from({ length: 1000 }, (_, i) => `job/${i}`);
    const leases = (await store.acquireMany(names, 'a', 5000)).map((o) => o.lease!);

    const renewed = await sent(() => store.renewMany(leases), { time: 1, hmget: 1000, hset: 1000 });
    expect(renewed.every((l, i) => l?.token === leases[i]!.token)).toBe(true);
    const released = await sent(() => store.releaseMany(renewed.map((l) => l!)), {
      hmget: 1000,
      publish: 1000,
      hset: 1000,
    });
    expect(released.every(Boolean)).toBe(true);
    const records = await store.list({ prefix: 'job/', limit: 2000 });
    expect(records).toHaveLength(1000);
    expect(records.every((r) => r.owner === '' && r.token === 1 && r.expiresAt === 0)).toBe(true);
  });

  it('writes tokens as plain integers up to 2^53 − 1, so release still matches them as text', async () => {
    const store = await open('prefix=big1:');
    await store.release((await store.tryAcquire('job', 'a', 5000))!);
    await server.cli('hset', 'big1:{0}r:job', 'token', String(Number.MAX_SAFE_INTEGER - 1));
    const lease = (await store.tryAcquire('job', 'a', 5000))!;
    expect(lease.token).toBe(Number.MAX_SAFE_INTEGER);
    expect(await server.cli('hget', 'big1:{0}r:job', 'token')).toBe('9007199254740991');
    expect(await server.cli('hget', 'big1:{0}r:job', 'expiresAt')).toBe(String(lease.expiresAt));
    expect(await store.renew(lease)).toMatchObject({ token: Number.MAX_SAFE_INTEGER });
    expect(await store.release(lease)).toBe(true);

    await server.cli('hset', 'big1:{0}r:job', 'token', String(Number.MAX_SAFE_INTEGER - 1));
    const [outcome] = await store.acquireMany(['job'], 'b', 5000);
    expect(outcome!.lease).toMatchObject({ owner: 'b', token: Number.MAX_SAFE_INTEGER });
    const [blocked] = await store.acquireMany(['job'], 'c', 5000);
    expect(blocked!.holder).toMatchObject({ owner: 'b', token: Number.MAX_SAFE_INTEGER });
  });

  it('refuses to take a record whose expiresAt is not a number, on every acquire path, and leaves it as it was', async () => {
    const store = await open('prefix=bad1:');
    const held = (await store.tryAcquire('job', 'a', 60_000))!;
    await server.cli('hset', 'bad1:{0}r:job', 'expiresAt', 'soon');
    const calls: [string, () => Promise<unknown>][] = [
      ['tryAcquire', () => store.tryAcquire('job', 'b', 5000)],
      ['acquireMany', () => store.acquireMany(['job'], 'b', 5000)],
      // two at once: the second goes coalesced with the first, through the transitions script
      [
        'tryAcquire',
        () => Promise.all([store.tryAcquire('x', 'b', 5000), store.tryAcquire('job', 'b', 5000)]),
      ],
    ];
    for (const [operation, call] of calls) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, operation).toBeInstanceOf(LeaseError);
      expect((error as LeaseError).code).toBe('RECORD_INVALID');
      expect((error as LeaseError).retryable).toBe(false);
      expect((error as LeaseError).message).toContain('expiresAt is "soon"');
    }
    expect(await server.cli('hgetall', 'bad1:{0}r:job')).toBe(
      ['owner', 'a', 'token', String(held.token), 'expiresAt', 'soon'].join('\n'),
    );
  });

  it('keeps working on records the previous scripts wrote: tokens go on, list and get see them', async () => {
    const prefix = 'old1:';
    await server.cli('set', `${prefix}meta`, 'leasehold-redis/1 shards=1');
    const previous = (lua: string, keys: string[], ...args: string[]): Promise<string> =>
      server.cli('eval', lua, String(keys.length), ...keys, ...args);
    const record = (name: string): string[] => [`${prefix}{0}r:${name}`, `${prefix}{0}index`];
    await previous(PREVIOUS_ACQUIRE, record('job'), 'a', '5000', 'job'); // token 1
    await previous(PREVIOUS_RELEASE, [record('job')[0]!], `${prefix}released`, 'a', '1', 'job');
    await previous(PREVIOUS_ACQUIRE, record('job'), 'b', '150', 'job'); // token 2, soon expired
    await previous(PREVIOUS_ACQUIRE, record('live'), 'c', '60000', 'live');
    await sleep(250);

    const store = await open(`prefix=${prefix}`);
    expect(await store.get('job')).toMatchObject({ owner: 'b', token: 2 });
    const taken = await sent(() => store.tryAcquire('job', 'd', 5000), {
      time: 1,
      hmget: 1,
      hset: 1,
    });
    expect(taken).toMatchObject({ owner: 'd', token: 3 });
    expect(await store.tryAcquire('live', 'd', 5000)).toBeNull();
    expect((await store.list()).map((r) => [r.resource, r.owner, r.token])).toEqual([
      ['job', 'd', 3],
      ['live', 'c', 1],
    ]);

    // A store still on the previous scripts keeps working beside this one.
    expect(await store.release(taken!)).toBe(true);
    await previous(PREVIOUS_ACQUIRE, record('job'), 'e', '5000', 'job');
    expect(await store.get('job')).toMatchObject({ owner: 'e', token: 4 });
    expect(await server.cli('zcard', `${prefix}{0}index`)).toBe('2');
  });

  it('acquireMany of 1,000 resources is one script call on one clock reading; bigger batches go in calls of 1,000', async () => {
    const store = await open('prefix=count1:');
    await store.acquireMany(['warm'], 'w', 5000); // layout checked, script loaded
    const names = (from: number, n: number): string[] =>
      Array.from({ length: n }, (_, i) => `job/${from + i}`);

    const before = await commandCalls(server);
    const outcomes = await store.acquireMany(names(0, 1000), 'a', 5000);
    const after = await commandCalls(server);
    const delta = (name: string): number => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    expect(outcomes.every((o) => o.lease?.token === 1)).toBe(true);
    expect(delta('evalsha') + delta('eval')).toBe(1);
    expect(delta('time')).toBe(1);
    expect(delta('hset')).toBe(1000);

    // 2,500 names (the first 1,000 now held): three calls of at most 1,000, every answer in order.
    const start = await scriptCalls(server);
    const many = await store.acquireMany(names(0, 2500), 'b', 5000);
    expect((await scriptCalls(server)) - start).toBe(3);
    expect(many.map((o) => o.resource)).toEqual(names(0, 2500));
    expect(many.slice(0, 1000).every((o) => o.lease === null && o.holder?.owner === 'a')).toBe(
      true,
    );
    expect(many.slice(1000).every((o) => o.lease?.owner === 'b')).toBe(true);
  });

  it('sends the script calls of every shard of an acquireMany at once', async () => {
    const redis = new Redis({ host: '127.0.0.1', port: server.port });
    let calls = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    const counted = async <T>(call: () => Promise<T>): Promise<T> => {
      calls++;
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      try {
        return await call();
      } finally {
        inFlight--;
      }
    };
    const client: RedisClient = {
      evalsha: (sha, numKeys, ...args) => counted(() => redis.evalsha(sha, numKeys, ...args)),
      eval: (script, numKeys, ...args) => counted(() => redis.eval(script, numKeys, ...args)),
      hmget: (key, ...fields) => redis.hmget(key, ...fields),
      duplicate: () => redis.duplicate(),
      quit: () => redis.quit(),
      disconnect: () => redis.disconnect(),
    };
    try {
      const store = await RedisStore.open(client, { prefix: 'count2:', shards: 4 });
      const names = Array.from({ length: 1000 }, (_, i) => `job/${i}`);
      await store.acquireMany(names.slice(0, 100), 'w', 5000); // the script is loaded
      calls = 0;
      maxInFlight = 0;
      const outcomes = await store.acquireMany(names, 'a', 5000);
      expect(calls).toBe(4);
      expect(maxInFlight).toBe(4);
      expect(outcomes.filter((o) => o.lease).length).toBe(900);
      await store.close();
    } finally {
      redis.disconnect();
    }
  });

  it('acquireMany decides expiry on the server clock, reports each holder exactly, and keeps records and tokens', async () => {
    const store = await open('prefix=many1:');
    const theirs = (await store.tryAcquire('held', 'b', 60_000))!;
    await store.tryAcquire('lapsed', 'b', 150);
    await sleep(250);

    const before = await serverMs(server);
    const outcomes = await store.acquireMany(['new', 'held', 'lapsed'], 'a', 5000);
    const after = await serverMs(server);
    expect(outcomes).toEqual([
      { resource: 'new', lease: expect.objectContaining({ owner: 'a', token: 1, ttlMs: 5000 }) },
      {
        resource: 'held',
        lease: null,
        holder: { resource: 'held', owner: 'b', token: 1, expiresAt: theirs.expiresAt },
      },
      { resource: 'lapsed', lease: expect.objectContaining({ owner: 'a', token: 2 }) },
    ]);
    const expiresAt = outcomes[0]!.lease!.expiresAt;
    expect(outcomes[2]!.lease!.expiresAt).toBe(expiresAt); // one clock reading per call
    expect(expiresAt).toBeGreaterThanOrEqual(before + 5000);
    expect(expiresAt).toBeLessThanOrEqual(after + 5000);

    for (const name of ['new', 'held', 'lapsed'])
      expect(await server.cli('pttl', `many1:{0}r:${name}`)).toBe('-1');
    expect((await server.cli('zrange', 'many1:{0}index', '0', '-1')).split('\n')).toEqual([
      'held',
      'lapsed',
      'new',
    ]);
    await store.releaseMany(outcomes.flatMap((o) => (o.lease ? [o.lease] : [])));
    const again = await store.acquireMany(['lapsed', 'new'], 'c', 5000);
    expect(again.map((o) => o.lease?.token)).toEqual([3, 2]);
  });

  it('pages a sharded namespace with after, in code-point order, at every page size', async () => {
    const store = await open('prefix=page1:&shards=4');
    const sorted = ['Z', 'a', 'a%', 'a_', 'aa', 'ab', 'b', 'é', '\uffff', '🚀'];
    await store.acquireMany([...sorted].reverse(), 'o', 5000);
    expect((await store.list()).map((r) => r.resource)).toEqual(sorted);
    for (const limit of [1, 2, 3, 4]) {
      const seen: string[] = [];
      let after = '';
      for (let pages = 0; pages < 20; pages++) {
        const page = await store.list({ limit, after });
        seen.push(...page.map((r) => r.resource));
        if (page.length < limit) break;
        after = page.at(-1)!.resource;
      }
      expect(seen, `limit ${limit}`).toEqual(sorted);
    }
    const names = async (prefix: string, after: string, limit?: number): Promise<string[]> =>
      (await store.list({ prefix, after, limit })).map((r) => r.resource);
    expect(await names('a', 'A')).toEqual(['a', 'a%', 'a_', 'aa', 'ab']); // after sorts before the prefix
    expect(await names('a', 'a')).toEqual(['a%', 'a_', 'aa', 'ab']);
    expect(await names('a', 'a_', 1)).toEqual(['aa']);
    expect(await names('a', 'b')).toEqual([]);
    expect(await names('', '\uffff')).toEqual(['🚀']); // byte order, not UTF-16 order
    expect(await names('', '🚀')).toEqual([]);
  });
});

/**
 * The acquire and release scripts of the previous version of this layout, verbatim: every acquire
 * wrote the index entry again, and release took a list of leases. Records they wrote must keep
 * working, and stores running them must keep working beside the current ones.
 */
const PREVIOUS_ACQUIRE = `
redis.replicate_commands()
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local r = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expiresAt')
local owner = r[1] or ''
if owner ~= '' and (tonumber(r[3]) or 0) >= now then return {0} end
local token = (tonumber(r[2]) or 0) + 1
local expiresAt = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', string.format('%d', token),
  'expiresAt', string.format('%d', expiresAt))
redis.call('ZADD', KEYS[2], 0, ARGV[3])
return {token, expiresAt}
`;

const PREVIOUS_RELEASE = `
local out = {}
for i = 1, #KEYS do
  local a = 1 + (i - 1) * 3
  local r = redis.call('HMGET', KEYS[i], 'owner', 'token')
  if r[1] == ARGV[a + 1] and r[2] == ARGV[a + 2] then
    redis.call('PUBLISH', ARGV[1], ARGV[a + 3])
    redis.call('HSET', KEYS[i], 'owner', '', 'expiresAt', '0')
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
`;
