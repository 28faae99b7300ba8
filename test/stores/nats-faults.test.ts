import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, type HeldLease, type LeaseError, type LeaseStore } from '../../src/index.js';
import { NatsStore } from '../../src/stores/nats/index.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';
import { NatsServer, natsUnavailable } from '../harness/nats-server.js';
import { freePort } from '../harness/ports.js';
import { waitFor } from '../harness/processes.js';
import { TcpProxy } from '../harness/tcp-proxy.js';

let buckets = 0;
const freshBucket = (): string => `faults_${process.pid}_${++buckets}`;

describeServer('NATS store under faults', natsUnavailable(), () => {
  let server: NatsServer;
  const cleanup: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterEach(async () => {
    server.resume();
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function store(bucket: string, params = 'timeoutMs=400', port = server.port) {
    const opened = await NatsStore.open(
      `nats://127.0.0.1:${port}?bucket=${bucket}&maxClockSkewMs=50&${params}`,
    );
    cleanup.push(() => opened.close());
    return opened;
  }

  function client(st: LeaseStore, owner: string, ttlMs: number, heartbeatMs: number) {
    const c = new LeaseClient({ store: st, owner, ttlMs, heartbeatMs });
    cleanup.push(() => c.close());
    return c;
  }

  /** The next renewal or loss of `held`. */
  const nextOutcome = (held: HeldLease): Promise<'renewed' | 'lost'> =>
    new Promise((resolve) => {
      held.once('renewed', () => resolve('renewed'));
      held.once('lost', () => resolve('lost'));
    });

  it('SIGKILL and restart on the same store folder: the held lease survives and tokens keep rising', async () => {
    const bucket = freshBucket();
    const st = await store(bucket);
    const tokens: number[] = [];
    for (let i = 0; i < 2; i++) {
      const lease = (await st.tryAcquire('job', 'warmup', 5000))!;
      tokens.push(lease.token);
      await st.release(lease);
    }
    const held = await client(st, 'a', 3000, 300).acquire('job');
    tokens.push(held.token);

    await server.restart(); // SIGKILL, then the same port and JetStream folder
    await waitFor(
      'a renewal after the restart',
      async () => (await nextOutcome(held)) === 'renewed',
      10_000,
    );
    expect(held.state).not.toBe('lost');
    expect(await st.get('job')).toMatchObject({ owner: 'a', token: held.token });
    await held.release();

    for (let i = 0; i < 2; i++) {
      await server.restart();
      const lease = (await waitForAnswer(() => st.tryAcquire('job', `after-${i}`, 5000)))!;
      tokens.push(lease.token);
      expect(await st.release(lease)).toBe(true);
    }
    expect(tokens).toEqual([1, 2, 3, 4, 5]);
    // A store opened after the restarts reads the same records.
    expect(await (await store(bucket)).get('job')).toMatchObject({ owner: '', token: 5 });
  }, 40_000);

  it('the watch outlives a server restart: a release after it is still reported', async () => {
    const bucket = freshBucket();
    const errors: string[] = [];
    const watcher = await NatsStore.open(
      `${server.url}?bucket=${bucket}&maxClockSkewMs=50&timeoutMs=400`,
      { onWatchError: (error) => errors.push(error.message) },
    );
    cleanup.push(() => watcher.close());
    const writer = await store(bucket);
    const events: string[] = [];
    const unwatch = watcher.watch('', (event) => events.push(`${event.type} ${event.resource}`));
    cleanup.push(async () => unwatch());
    await unwatch.ready;
    const before = (await writer.tryAcquire('before', 'a', 60_000))!;
    await waitFor('the first event', () => events.length === 1);

    await server.restart();
    const after = (await waitForAnswer(() => writer.tryAcquire('after', 'a', 60_000)))!;
    await writer.release(before);
    await writer.release(after);
    await waitFor(
      'the events after the restart',
      () => events.includes('released before') && events.includes('released after'),
      15_000,
    );
    expect(events[0]).toBe('acquired before');
  }, 30_000);

  it('renewals resume after a pause shorter than the TTL, and nothing is lost', async () => {
    const st = await store(freshBucket());
    const held = await client(st, 'holder', 3000, 500).acquire('job');
    const risks: string[] = [];
    held.on('at-risk', (reason) => risks.push(reason));

    server.pause();
    await sleep(1200);
    server.resume();
    await waitFor('a renewal after the pause', async () => (await nextOutcome(held)) === 'renewed');

    expect(risks.some((r) => r.includes('renewal failed'))).toBe(true); // the pause was felt
    expect(held.signal.aborted).toBe(false);
    expect(held.isValid()).toBe(true);
    expect(await st.get('job')).toMatchObject({ owner: 'holder', token: held.token });
  });

  it('a pause longer than the TTL aborts the holder by its deadline, before the server returns; a peer takes over', async () => {
    const bucket = freshBucket();
    const held = await client(await store(bucket), 'holder', 1500, 250).acquire('job');
    let paused = false;
    let abortedWhilePaused: boolean | undefined;
    let abortedAt = 0;
    held.signal.addEventListener('abort', () => {
      abortedWhilePaused = paused;
      abortedAt = performance.now();
    });

    paused = true;
    server.pause();
    await waitFor('the holder to give up', () => held.signal.aborted, 10_000);
    paused = false;
    server.resume();

    expect(abortedWhilePaused).toBe(true);
    expect(abortedAt).toBeGreaterThanOrEqual(held.validUntil); // at its deadline, not before
    expect((held.signal.reason as LeaseError).code).toBe('LEASE_LOST');
    expect(held.isValid()).toBe(false);

    // Renewals that timed out during the pause may land now (NATS applies them on resume): they
    // only hold the record a little longer; the peer still takes it, with the next token.
    const peer = client(await store(bucket), 'peer', 1500, 250);
    const taken = await peer.acquire('job', { waitMs: 10_000 });
    expect(taken.token).toBe(held.token + 1);
  }, 20_000);

  it('a paused server gives STORE_UNAVAILABLE within the deadline on every call, then works again', async () => {
    const st = await store(freshBucket(), 'timeoutMs=300');
    const lease = (await st.tryAcquire('job', 'a', 10_000))!;
    server.pause();
    try {
      for (const call of [
        () => st.tryAcquire('other', 'a', 5000),
        () => st.renew(lease),
        () => st.renewMany([lease, lease]),
        () => st.release({ ...lease, token: 9 }),
        () => st.get('job'),
        () => st.list(),
      ]) {
        const error = await rejection(call(), 5000);
        expect(error.code).toBe('STORE_UNAVAILABLE');
        expect(error.retryable).toBe(true);
      }
      const opening = await rejection(store(freshBucket(), 'timeoutMs=300'), 5000);
      expect([opening.code, opening.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    } finally {
      server.resume();
    }
    expect(await waitForAnswer(() => st.renew(lease))).toMatchObject({ owner: 'a', token: 1 });
  });

  it('a paused server fails a renewMany of many leases within about one deadline, not one per lease', async () => {
    // 500 leases, 50 in flight: one deadline per window in turn would be 10 s.
    const st = await store(freshBucket(), 'timeoutMs=1000&concurrency=50');
    const names = Array.from({ length: 500 }, (_, i) => `many/${i}`);
    const leases = (await st.acquireMany(names, 'a', 60_000)).map((o) => o.lease!);
    let elapsed = 0;
    const { result: error, msgs } = await server.receivedDuring(async () => {
      server.pause();
      const started = performance.now();
      try {
        return await rejection(st.renewMany(leases), 10_000);
      } finally {
        elapsed = performance.now() - started;
        server.resume(); // the writes sent meanwhile reach it now, and are counted
      }
    });
    expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    expect(elapsed).toBeGreaterThanOrEqual(950);
    // The first window's 50 writes timed out together and no write started after them: windows
    // waited out one after another would have sent all 500.
    expect(msgs).toBe(50);
    // The writes sent before the pause may land once it ends; the next renewMany settles every lease.
    const renewed = await waitForAnswer(() => st.renewMany(leases));
    expect(renewed.map((l) => l && `${l.resource} ${l.token}`)).toEqual(
      names.map((name) => `${name} 1`),
    );
  });

  it('nothing listening: open fails with a retryable STORE_UNAVAILABLE, without the password', async () => {
    const port = await freePort();
    const error = await rejection(
      NatsStore.open(`nats://lh:s3cret@127.0.0.1:${port}?timeoutMs=300`),
    );
    expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(error.message).not.toContain('s3cret');
    const token = await rejection(NatsStore.open(`nats://t0ken@127.0.0.1:${port}?timeoutMs=300`));
    expect(token.message).not.toContain('t0ken');
  });

  describe('lost responses (through a loopback proxy that drops the answers)', () => {
    let proxy: TcpProxy;
    beforeAll(async () => {
      proxy = await TcpProxy.start(server.port);
    });
    afterAll(async () => {
      await proxy?.stop();
    });
    afterEach(() => {
      proxy.mode = 'pass';
    });

    /** One store through the proxy, one direct, on the same bucket. */
    async function pair(params = 'timeoutMs=600') {
      const bucket = freshBucket();
      const direct = await store(bucket);
      const viaProxy = await store(bucket, params, proxy.port);
      return { direct, viaProxy };
    }

    it('a renew whose answer was lost landed; retried, it succeeds: not a loss', async () => {
      const { direct, viaProxy } = await pair();
      const lease = (await viaProxy.tryAcquire('job', 'a', 10_000))!;

      proxy.mode = 'drop-responses';
      const dropped = proxy.nextDroppedResponse();
      const renewing = viaProxy.renew(lease, 20_000);
      await dropped;
      const landed = (await direct.get('job'))!;
      expect(landed.expiresAt).toBeGreaterThan(lease.expiresAt); // applied; its caller never heard
      const error = await rejection(renewing);
      expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
      proxy.mode = 'pass';

      const retried = await viaProxy.renew(lease, 20_000);
      expect(retried).toMatchObject({ owner: 'a', token: 1, ttlMs: 20_000 });
      expect(await direct.get('job')).toEqual({
        resource: 'job',
        owner: 'a',
        token: 1,
        expiresAt: retried!.expiresAt,
      });
    });

    it('a renewMany whose answers were lost landed; retried, every lease is settled by reading it back', async () => {
      const { direct, viaProxy } = await pair();
      const names = Array.from({ length: 40 }, (_, i) => `lost/${i}`);
      const leases = (await viaProxy.acquireMany(names, 'a', 10_000)).map((o) => o.lease!);

      proxy.mode = 'drop-responses';
      const dropped = proxy.nextDroppedResponse();
      const renewing = viaProxy.renewMany(leases, 20_000);
      await dropped;
      const error = await rejection(renewing);
      expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
      proxy.mode = 'pass';
      const landed = (await direct.list({ prefix: 'lost/', limit: 100 })).filter(
        (r) => r.expiresAt > leases[0]!.expiresAt,
      );
      expect(landed.length).toBeGreaterThan(0); // applied; its caller never heard

      // Every known revision is stale now: each lease is refused, read back, and written again.
      const retried = await viaProxy.renewMany(leases, 20_000);
      expect(retried.map((l) => l && `${l.resource} ${l.owner} ${l.token}`)).toEqual(
        names.map((name) => `${name} a 1`),
      );
      const records = new Map(
        (await direct.list({ prefix: 'lost/', limit: 100 })).map((r) => [r.resource, r]),
      );
      for (const lease of retried)
        expect(records.get(lease!.resource)!.expiresAt).toBe(lease!.expiresAt);
      // And the one after needs no read: one write per lease again.
      const again = await viaProxy.renewMany(leases, 20_000);
      expect(again.every((l) => l !== null)).toBe(true);
    });

    it("a holder's heartbeat that loses one renewal's answer keeps the lease", async () => {
      const { direct, viaProxy } = await pair('timeoutMs=300');
      const held = await client(viaProxy, 'a', 3000, 500).acquire('job');
      const risks: string[] = [];
      held.on('at-risk', (reason) => risks.push(reason));

      proxy.mode = 'drop-responses';
      await waitFor('a renewal to fail', () => risks.length > 0, 5000);
      const landed = (await direct.get('job'))!;
      proxy.mode = 'pass';
      await waitFor(
        'a renewal after the lost answer',
        async () => (await nextOutcome(held)) === 'renewed',
      );

      expect(held.state).not.toBe('lost');
      expect(held.signal.aborted).toBe(false);
      const now = (await direct.get('job'))!;
      expect(now).toMatchObject({ owner: 'a', token: held.token });
      expect(now.expiresAt).toBeGreaterThanOrEqual(landed.expiresAt);
    });

    it('an acquire whose answer was lost is adopted by the next try of the same owner, and by no one else', async () => {
      const { direct, viaProxy } = await pair();
      await direct.release((await direct.tryAcquire('job', 'x', 5000))!); // token 1, released

      // An acquire reads, then writes: let the read's answer through and drop the write's.
      dropAnswersAfter(proxy, 2);
      const dropped = proxy.nextDroppedResponse();
      const acquiring = viaProxy.tryAcquire('job', 'a', 10_000);
      await dropped;
      const error = await rejection(acquiring);
      expect(error.code).toBe('STORE_UNAVAILABLE');
      proxy.mode = 'pass';
      const landed = (await direct.get('job'))!;
      expect(landed).toMatchObject({ owner: 'a', token: 2 }); // it did land

      expect(await direct.tryAcquire('job', 'a', 10_000)).toBeNull(); // another handle: not its write
      expect(await viaProxy.tryAcquire('job', 'b', 10_000)).toBeNull(); // another owner
      const adopted = await viaProxy.tryAcquire('job', 'a', 10_000);
      expect(adopted).toMatchObject({ owner: 'a', token: 2 });
      expect(adopted!.expiresAt).toBeGreaterThanOrEqual(landed.expiresAt); // renewed from now
      expect(await direct.get('job')).toMatchObject({
        owner: 'a',
        token: 2,
        expiresAt: adopted!.expiresAt,
      });
      expect(await viaProxy.tryAcquire('job', 'a', 10_000)).toBeNull(); // adopted once
      expect(await viaProxy.release(adopted!)).toBe(true);
    });
  });
});

/**
 * Switches `proxy` to dropping answers the moment it forwards the `n`th request from now: in the
 * same turn of the event loop, so that request's answer, which comes later, is dropped.
 */
function dropAnswersAfter(proxy: TcpProxy, n: number): void {
  let forwarded = proxy.counts.forwarded;
  const until = forwarded + n;
  Object.defineProperty(proxy.counts, 'forwarded', {
    configurable: true,
    enumerable: true,
    get: () => forwarded,
    set: (value: number) => {
      forwarded = value;
      if (value === until) proxy.mode = 'drop-responses';
    },
  });
}

/** The first answer of `call` once the server is back (it fails while the client reconnects). */
async function waitForAnswer<T>(call: () => Promise<T>): Promise<T> {
  let answer: { value: T } | undefined;
  await waitFor(
    'the store to answer',
    async () => {
      answer = { value: await call() };
      return true;
    },
    10_000,
    100,
  );
  return answer!.value;
}
