import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, type HeldLease, type LeaseStore } from '../../src/index.js';
import { NatsStore } from '../../src/stores/nats/index.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
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

  it('nothing listening: a token in the URL is never shown either', async () => {
    const port = await freePort();
    const token = await rejection(NatsStore.open(`nats://t0ken@127.0.0.1:${port}?timeoutMs=300`));
    expect([token.code, token.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
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
