import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type LeaseStore, type WatchEvent } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { waitFor } from '../harness/processes.js';
import { RedisServer, redisUnavailable } from '../harness/redis-server.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';

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

  it('loads its scripts again when the server forgot them (SCRIPT FLUSH, a restart, a new node)', async () => {
    const store = await open('prefix=app7:');
    const lease = (await store.tryAcquire('job', 'a', 5000))!;
    expect(await server.cli('script', 'flush')).toBe('OK');
    expect(await store.renew(lease)).toMatchObject({ token: 1 });
    expect(await store.list()).toHaveLength(1);
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

  it('wakes watchers of a matching prefix on release, and only them', async () => {
    const watcher = (await open('prefix=app5:')) as RedisStore;
    const other = await open('prefix=app5:');
    const jobs: WatchEvent[] = [];
    const all: string[] = [];
    const stopJobs = watcher.watch('jobs/', (e) => jobs.push(e));
    const stopAll = watcher.watch('', (e) => all.push(e.resource));
    await Promise.all([stopJobs.ready, stopAll.ready]);

    const x = (await other.tryAcquire('other/1', 'b', 5000))!;
    const j1 = (await other.tryAcquire('jobs/1', 'b', 5000))!;
    expect(await other.release({ ...j1, token: 99 })).toBe(false); // not ours: no event
    expect(await other.releaseMany([x, j1])).toEqual([true, true]);
    await waitFor('the release of jobs/1', () => jobs.length === 1);
    expect(jobs).toEqual([{ type: 'released', resource: 'jobs/1' }]);
    expect(all).toEqual(['other/1', 'jobs/1']);

    stopJobs();
    await other.release((await other.tryAcquire('jobs/2', 'b', 5000))!);
    await waitFor('the release of jobs/2', () => all.length === 3);
    expect(jobs).toHaveLength(1);
    stopAll();
  });
});
