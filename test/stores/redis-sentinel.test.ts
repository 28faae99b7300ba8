import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, type LeaseStore, type WatchEvent } from '../../src/index.js';
import { freePort } from '../../src/cli/harness/servers/process-tree.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { waitFor } from '../harness/processes.js';
import { RedisSentinels, redisUnavailable } from '../harness/redis-server.js';

describeServer('redis store through Sentinel', redisUnavailable(), () => {
  let set: RedisSentinels;
  const opened: LeaseStore[] = [];
  const open = async (query: string): Promise<LeaseStore> => {
    const store = await openStore(`${set.url}&${query}`);
    opened.push(store);
    return store;
  };

  beforeAll(async () => {
    set = await RedisSentinels.start();
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled(opened.map((s) => s.close()));
    await set?.stop();
  });

  it('finds the primary through the Sentinels and follows it when they fail over to the replica', async () => {
    const store = await open('prefix=fo:');
    const watcher = await open('prefix=fo:');
    const events: WatchEvent[] = [];
    const unwatch = watcher.watch!('', (event) => events.push(event));
    await unwatch.ready;
    const lease = (await store.tryAcquire('job', 'a', 60_000))!;
    expect(lease.token).toBe(1);
    expect(await set.primary.cli('keys', 'fo:*')).toContain('job'); // on the primary the Sentinels named
    // Let the replica have the grant before the failover (replication is asynchronous), then
    // have the Sentinels promote it.
    expect(Number(await set.primary.cli('wait', '1', '5000'))).toBe(1);
    expect(await set.sentinels[1]!.cli('sentinel', 'failover', set.name)).toBe('OK');
    await waitFor(
      'the Sentinels to name the replica',
      async () => {
        return (await set.primaryPort()) === set.replica.port;
      },
      20_000,
    );
    await waitFor('the replica to be the primary', async () =>
      (await set.replica.cli('info', 'replication')).includes('role:master'),
    );
    // The same store renews on the new primary and grants the next token there.
    let renewed = null;
    await waitFor(
      'a renewal on the new primary',
      async () => {
        renewed = await store.renew(lease);
        return renewed !== null;
      },
      20_000,
    );
    expect(renewed).toMatchObject({ owner: 'a', token: 1 });
    expect((await set.replica.cli('info', 'keyspace')).includes('keys=')).toBe(true);
    expect(await store.release(renewed!)).toBe(true);
    expect(await store.tryAcquire('job', 'b', 60_000)).toMatchObject({ token: 2 });
    expect(await store.get('job')).toMatchObject({ owner: 'b', token: 2 });
    // The watcher's own connection followed too: it saw the release made on the new primary.
    await waitFor('the release seen', () => events.some((e) => e.type === 'released'), 10_000);
    unwatch();
  }, 60_000);

  it('close() leaves no connection to any Sentinel behind', async () => {
    /** Connections each Sentinel has from clients other than Sentinels and redis-cli. */
    const clients = async (): Promise<number[]> =>
      Promise.all(
        set.sentinels.map(async (s) => {
          const list = (await s.cli('client', 'list')).split('\n');
          return list.filter(
            (line) => !/ flags=S | cmd=client/.test(line) && !/name=sentinel-/.test(line),
          ).length;
        }),
      );
    const before = await clients();
    const store = await openStore(`${set.url}&prefix=close:`);
    const unwatch = store.watch!('', () => {});
    await unwatch.ready;
    await store.tryAcquire('job', 'a', 60_000);
    const open = await clients();
    expect(open.reduce((a, b) => a + b, 0)).toBeGreaterThan(before.reduce((a, b) => a + b, 0));
    unwatch();
    await store.close();
    await waitFor(
      'every Sentinel connection closed',
      async () => {
        const after = await clients();
        return after.every((n, i) => n === before[i]);
      },
      5000,
    );
  });

  it('with every Sentinel down: STORE_UNAVAILABLE within the connect timeout, no password shown', async () => {
    const [a, b] = [await freePort(), await freePort()];
    const url = `redis://u:pw1@127.0.0.1:${a}?sentinel=${set.name}&sentinels=127.0.0.1:${b}&connectTimeoutMs=1000`;
    const error = await rejection(openStore(url), 10_000); // no hang: the connect timeout ends it
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.message).toContain(`127.0.0.1:${a}`);
    expect(error.message).not.toContain('pw1');
    expect(error.message).toContain('no Sentinel answered with the primary of master group');
  });

  it('a master group the Sentinels do not watch: STORE_UNAVAILABLE naming it', async () => {
    const error = await rejection(
      openStore(
        set.url.replace(`sentinel=${set.name}`, 'sentinel=nosuch') + '&connectTimeoutMs=1500',
      ),
      10_000,
    );
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.message).toContain('the Sentinels watch no master group "nosuch"');
  });
});
