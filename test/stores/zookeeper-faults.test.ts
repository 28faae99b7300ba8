import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { LeaseClient, type LeaseStore, type WatchEvent } from '../../src/index.js';
import { parseStoreUrl } from '../../src/core/store-url.js';
import { openZookeeper } from '../../src/stores/zookeeper/open.js';
import { describeServer } from '../harness/describe-server.js';
import { sleep } from '../harness/expect-error.js';
import { waitFor } from '../harness/processes.js';
import { TcpProxy } from '../harness/tcp-proxy.js';
import { ZookeeperServer, zookeeperUnavailable } from '../harness/zookeeper-server.js';

describeServer('zookeeper store under faults', zookeeperUnavailable(), () => {
  let server: ZookeeperServer;
  let counter = 0;
  const cleanup: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    server = await ZookeeperServer.start();
  }, 30_000);
  afterAll(async () => server?.stop());
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
    if (!server.running) await server.launch();
    server.resume();
  });

  /** A store on a fresh chroot (or the given one), through `port` (the server's, or a proxy's). */
  async function store(
    options: { chroot?: string; port?: number; timeoutMs?: number } = {},
  ): Promise<LeaseStore> {
    const chroot = options.chroot ?? `/faults/t${++counter}`;
    const port = options.port ?? server.clientPort;
    const url = parseStoreUrl(
      `zookeeper://127.0.0.1:${port}${chroot}?timeoutMs=${options.timeoutMs ?? 500}`,
    );
    // The short timeout is for the calls under test; it bounds the connect too, which a busy
    // machine can miss before any fault is injected: opening is tried again, up to three times.
    let opened: LeaseStore | undefined;
    for (let attempt = 1; !opened; attempt++) {
      try {
        opened = await openZookeeper(url);
      } catch (error) {
        if (attempt === 3 || (error as { code?: string }).code !== 'STORE_UNAVAILABLE') throw error;
      }
    }
    cleanup.push(() => opened.close());
    return opened;
  }

  function client(st: LeaseStore, owner: string, ttlMs: number): LeaseClient {
    const c = new LeaseClient({ store: st, owner, ttlMs, heartbeatMs: Math.floor(ttlMs / 6) });
    cleanup.push(() => c.close());
    return c;
  }

  it('a SIGKILL and restart keeps the held lease, its session and the tokens', async () => {
    const st = await store();
    for (let i = 0; i < 2; i++) await st.release((await st.tryAcquire('job', 'warmup', 5000))!);
    // A TTL well past a JVM restart on a loaded machine: the point is that the session survives.
    const held = (await client(st, 'a', 10_000).tryAcquire('job'))!;
    expect(held.token).toBe(3);
    let renewals = 0;
    held.on('renewed', () => renewals++);

    await server.restart(); // same port and data folder
    const before = renewals;
    await waitFor('a renewal after the restart', () => renewals > before, 20_000);
    expect(held.state).not.toBe('lost');
    expect(held.signal.aborted).toBe(false);
    await waitFor(
      'the record read after the restart',
      async () => (await st.get('job').catch(() => null)) !== null,
      10_000,
    );
    expect(await st.get('job')).toMatchObject({ owner: 'a', token: 3 });

    await held.release();
    expect(await st.tryAcquire('job', 'b', 3000)).toMatchObject({ owner: 'b', token: 4 });
  }, 60_000);

  it('a session expiry ends every lease of that session at once; tokens keep rising', async () => {
    const proxy = await TcpProxy.start(server.clientPort);
    cleanup.push(() => proxy.stop());
    const chroot = `/faults/t${++counter}`;
    const cut = await store({ chroot, port: proxy.port, timeoutMs: 400 });
    const other = await store({ chroot });
    // TTL 1 s: the session of these leases is granted 1 s; the other lease is on another session.
    const a = (await cut.tryAcquire('s/a', 'cut', 1000))!;
    const b = (await cut.tryAcquire('s/b', 'cut', 1000))!;
    const long = (await cut.tryAcquire('s/long', 'cut', 60_000))!;
    const untaken = (await cut.tryAcquire('quiet/c', 'cut', 1000))!; // nobody takes this one over
    const events: WatchEvent[] = [];
    const unwatch = (other as LeaseStore & { watch: NonNullable<LeaseStore['watch']> }).watch(
      's/',
      (event) => events.push(event),
    );
    cleanup.push(async () => unwatch());
    await (unwatch as unknown as { ready: Promise<void> }).ready;

    proxy.mode = 'blackhole'; // the server hears nothing more from that process
    await waitFor(
      'the server to expire the session and delete its holds',
      () => events.filter((e) => e.type === 'expired').length >= 2,
      10_000,
    );
    expect(
      events
        .filter((e) => e.type === 'expired')
        .map((e) => e.resource)
        .sort(),
    ).toEqual(['s/a', 's/b']);
    // Nobody took them over: the server deleted the holds when the session expired.
    expect(await other.get('s/a')).toMatchObject({ owner: 'cut', token: 1 });
    const taken = await other.acquireMany(['s/a', 's/b', 's/long'], 'other', 5000);
    expect(taken.map((o) => o.lease?.token ?? null)).toEqual([2, 2, null]);
    expect(taken[2]!.holder).toMatchObject({ owner: 'cut', token: 1 });

    proxy.mode = 'pass';
    proxy.resetAll(); // the cut-off process reconnects and learns its session expired
    await waitFor(
      'the cut-off store to answer again',
      async () => (await cut.get('s/a').catch(() => null)) !== null,
      10_000,
    );
    // The first call on the expired session learns of the expiry; the next ones use a new session.
    await waitFor(
      'the cut-off store to renew on a new session',
      async () => (await cut.renew(a).catch(() => undefined)) !== undefined,
      10_000,
    );
    expect(await cut.renew(a)).toBeNull();
    expect(await cut.release(b)).toBe(false);
    expect(await cut.renew(long)).toMatchObject({ owner: 'cut', token: 1 });
    expect(await other.get('s/b')).toMatchObject({ owner: 'other', token: 2 });
    // Its hold went with the session, though its token never moved: ended all the same.
    expect(await other.get('quiet/c')).toMatchObject({ owner: 'cut', token: 1 });
    expect(await cut.renew(untaken)).toBeNull();
    expect(await cut.release(untaken)).toBe(false);
    expect(await other.get('quiet/c')).toMatchObject({ owner: 'cut', token: 1 });
    expect(await other.tryAcquire('quiet/c', 'other', 5000)).toMatchObject({ token: 2 });
  }, 40_000);

  it('a lease whose holder lives on without renewing lapses at its TTL on the server clock', async () => {
    const st = await store();
    const other = await store({ chroot: (st as unknown as { chroot: string }).chroot });
    const lease = (await st.tryAcquire('quiet', 'a', 400))!;
    expect(await other.tryAcquire('quiet', 'b', 5000)).toBeNull();
    await sleep(600);
    // The session of `st` lives on, so its hold znode is still there: the take-over replaces it.
    const taken = await other.tryAcquire('quiet', 'b', 5000);
    expect(taken).toMatchObject({ owner: 'b', token: 2 });
    expect(taken!.expiresAt).toBeGreaterThan(lease.expiresAt);
    expect(await st.renew(lease)).toBeNull();
  });
});
