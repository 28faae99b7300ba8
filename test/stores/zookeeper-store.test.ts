import { createRequire } from 'node:module';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseStore, WatchEvent } from '../../src/index.js';
import { parseStoreUrl } from '../../src/core/store-url.js';
import { ZookeeperStore } from '../../src/stores/zookeeper/index.js';
import type { ZkModule } from '../../src/stores/zookeeper/zookeeper-driver.js';
import { encodeName } from '../../src/stores/zookeeper/zookeeper-paths.js';
import { parseZookeeperUrl } from '../../src/stores/zookeeper/zookeeper-url.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { waitFor } from '../harness/processes.js';
import { ZookeeperServer, zookeeperUnavailable } from '../harness/zookeeper-server.js';

describe('zookeeper URLs', () => {
  const parse = (url: string): ReturnType<typeof parseZookeeperUrl> =>
    parseZookeeperUrl(parseStoreUrl(url));

  it('reads servers, the chroot path and parameters', () => {
    expect(parse('zookeeper://127.0.0.1:2181,zk2,zk3:2182/apps/leases?timeoutMs=900')).toEqual({
      hosts: ['127.0.0.1:2181', 'zk2:2181', 'zk3:2182'],
      store: { chroot: '/apps/leases', timeoutMs: 900, maxClockSkewMs: undefined },
      redacted: 'zookeeper://127.0.0.1:2181,zk2,zk3:2182/apps/leases?timeoutMs=900',
    });
    expect(parse('zookeeper://zk/').store.chroot).toBeUndefined();
  });

  it('refuses what it cannot use, with STORE_URL_INVALID naming the problem', async () => {
    const cases: [string, RegExp][] = [
      ['zookeeper:zk:2181', /no zookeeper:\/\//],
      ['zookeeper://zk:2181,,zk2', /an empty server/],
      ['zookeeper://u:secret@zk/x', /credentials/],
      ['zookeeper://[::1]:2181/x', /IPv6/],
      ['zookeeper://zk:port/x', /bad server/],
      ['zookeeper://zk/x?prefix=/a', /unknown parameter "prefix"/],
      ['zookeeper://zk/x?timeoutMs=soon', /timeoutMs/],
      ['zookeeper://zk/a/../b', /chroot/],
    ];
    for (const [url, message] of cases) {
      const error = await rejection(Promise.resolve().then(() => parse(url)));
      expect(error.code, url).toBe('STORE_URL_INVALID');
      expect(error.message, url).toMatch(message);
      expect(error.message).not.toContain('secret');
    }
  });

  it('encodes names ZooKeeper refuses in a znode name, and nothing else', () => {
    expect(encodeName('plain name: ok €')).toBe('plain name: ok €');
    expect(encodeName('a/b%c')).toBe('a%2Fb%25c');
    expect(encodeName('.')).toBe('%2E');
    expect(encodeName('..')).toBe('%2E%2E');
    expect(encodeName('tab\there')).toBe('tab%09here');
    expect(encodeName('🚀')).toBe('%F0%9F%9A%80');
  });
});

describeServer('zookeeper store', zookeeperUnavailable(), () => {
  let server: ZookeeperServer;
  let counter = 0;
  const opened: LeaseStore[] = [];

  beforeAll(async () => {
    server = await ZookeeperServer.start();
  }, 30_000);
  afterEach(async () => {
    await Promise.allSettled(opened.splice(0).map((s) => s.close()));
  });
  afterAll(async () => server?.stop());

  async function open(chroot: string): Promise<ZookeeperStore> {
    const store = await ZookeeperStore.open(`${server.url}${chroot}?timeoutMs=3000`);
    opened.push(store);
    return store;
  }

  const fresh = (): string => `/store/t${++counter}`;

  it('lets exactly one of many racing processes win, each on its own sessions', async () => {
    const chroot = fresh();
    const stores = await Promise.all(Array.from({ length: 6 }, () => open(chroot)));
    for (let round = 1; round <= 3; round++) {
      const results = await Promise.all(
        stores.flatMap((store, s) =>
          Array.from({ length: 5 }, (_, i) => store.tryAcquire('race', `p${s}-${i}`, 5000)),
        ),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(winners[0]!.token).toBe(round);
      expect(await stores[5]!.get('race')).toMatchObject({ owner: winners[0]!.owner });
      expect(await stores[0]!.release(winners[0]!)).toBe(true);
    }
  });

  it('round-trips names ZooKeeper refuses in znode names', async () => {
    const store = await open(fresh());
    const names = ['.', '..', 'a/b', '100%', '\ue000private', '\ufff5special', 'x\u0085y', '🚀/.'];
    for (const name of names)
      expect((await store.tryAcquire(name, 'o', 5000))?.resource).toBe(name);
    expect((await store.list()).map((r) => r.resource).sort()).toEqual([...names].sort());
  });

  it('watch never loses the last change, however quickly acquires and releases follow each other', async () => {
    const chroot = fresh();
    const watching = await open(chroot);
    const acting = await open(chroot);
    await acting.release((await acting.tryAcquire('q/job', 'a', 5000))!);
    const events: WatchEvent[] = [];
    const unwatch = watching.watch('q/', (event) => events.push(event));
    await unwatch.ready;
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 10; i++)
        await acting.release((await acting.tryAcquire('q/job', 'a', 5000))!);
      // The hold is gone now: whatever was coalesced, the watcher's last word is a release.
      await waitFor('the last release', () => events.at(-1)?.type === 'released', 5000);
      events.length = 0;
    }
    unwatch();
  });

  it('close leaves a session whose leases are still believed in: they last until their TTL', async () => {
    const chroot = fresh();
    const closing = await open(chroot);
    const other = await open(chroot);
    await closing.tryAcquire('kept', 'a', 1500);
    await closing.release((await closing.tryAcquire('given-up', 'a', 1500))!);
    await closing.close();
    expect(await other.tryAcquire('kept', 'b', 5000)).toBeNull();
    expect(await other.tryAcquire('given-up', 'b', 5000)).toMatchObject({ token: 2 });
    await waitFor(
      'the lease to lapse at its TTL',
      async () => (await other.tryAcquire('kept', 'b', 5000)) !== null,
      5000,
    );
    expect(await other.get('kept')).toMatchObject({ owner: 'b', token: 2 });
  });

  it('renew with a longer TTL moves the hold onto a session that covers it', async () => {
    const chroot = fresh();
    const store = await open(chroot);
    const lease = (await store.tryAcquire('grow', 'a', 1000))!;
    const before = await holdOwner(`${chroot}/r/grow/h`);
    const renewed = (await store.renew(lease, 10_000))!;
    expect(renewed).toMatchObject({ token: 1, ttlMs: 10_000 });
    const after = await holdOwner(`${chroot}/r/grow/h`);
    expect(after).not.toBe(before);
    // Renewed again with the same TTL: the hold stays where it is.
    expect(await store.renew(renewed)).toMatchObject({ token: 1, ttlMs: 10_000 });
    expect(await holdOwner(`${chroot}/r/grow/h`)).toBe(after);
    expect(await store.get('grow')).toMatchObject({ owner: 'a', token: 1 });
  });

  /** The session that owns an ephemeral znode, read with a client of its own. */
  async function holdOwner(path: string): Promise<string> {
    const zk = createRequire(import.meta.url)('node-zookeeper-client') as ZkModule;
    const client = zk.createClient(server.endpoint, {
      sessionTimeout: 2000,
      spinDelay: 100,
      retries: 0,
    });
    client.connect();
    try {
      return await new Promise<string>((resolve, reject) =>
        client.exists(path, undefined, (error, stat) =>
          error || !stat
            ? reject(error ?? new Error(`${path} is gone`))
            : resolve(stat.ephemeralOwner.toString('hex')),
        ),
      );
    } finally {
      client.close();
    }
  }

  it('connects through the driver module it is given (for bundles), and refuses anything else', async () => {
    const zk = createRequire(import.meta.url)('node-zookeeper-client') as ZkModule;
    let clients = 0;
    const driver: ZkModule = {
      CreateMode: zk.CreateMode,
      createClient: (...args) => {
        clients++;
        return zk.createClient(...args);
      },
    };
    const store = await ZookeeperStore.open(`${server.url}/given-driver?timeoutMs=3000`, {
      driver,
    });
    opened.push(store);
    const lease = await store.tryAcquire('bundled', 'a', 5000);
    expect(lease).toMatchObject({ owner: 'a', token: 1 });
    expect(clients).toBeGreaterThan(0);
    const error = await rejection(ZookeeperStore.open(server.url, { driver: {} as ZkModule }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/driver/);
  });

  it('refuses a store path that is not an absolute znode path', async () => {
    const error = await rejection(ZookeeperStore.open(`${server.url}`, { chroot: 'relative' }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/chroot/);
  });
});
