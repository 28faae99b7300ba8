import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import type { LeaseError } from '../../src/index.js';
import { LeaseClient, openStore, type HeldLease, type LeaseStore } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { waitFor } from '../harness/processes.js';
import { RedisServer, redisUnavailable, type RedisServerOptions } from '../harness/redis-server.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';

describeServer('redis store under faults', redisUnavailable(), () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });

  async function server(options?: RedisServerOptions): Promise<RedisServer> {
    const s = await RedisServer.start(options);
    cleanup.push(() => s.stop());
    return s;
  }

  async function store(s: RedisServer, params = 'commandTimeoutMs=300'): Promise<LeaseStore> {
    const opened = await openStore(`${s.url}?${params}`);
    cleanup.push(() => opened.close());
    return opened;
  }

  function client(st: LeaseStore, owner: string, ttlMs: number): LeaseClient {
    const c = new LeaseClient({ store: st, owner, ttlMs, heartbeatMs: Math.floor(ttlMs / 4) });
    cleanup.push(() => c.close());
    return c;
  }

  /** Acquires and releases `resource` until the next acquire will carry token `next`. */
  async function cycleTo(st: LeaseStore, resource: string, next: number): Promise<void> {
    for (let i = 1; i < next; i++)
      await st.release((await st.tryAcquire(resource, 'warmup', 5000))!);
  }

  function renewalsOf(held: HeldLease): () => number {
    let count = 0;
    held.on('renewed', () => count++);
    return () => count;
  }

  it('restart with AOF: the held lease survives and tokens continue upward', async () => {
    const s = await server({ aof: true });
    const st = await store(s);
    await cycleTo(st, 'job', 3);
    const held = (await client(st, 'a', 3000).tryAcquire('job'))!;
    expect(held.token).toBe(3);
    const renewals = renewalsOf(held);

    await s.restart();
    const after = renewals();
    await waitFor('a renewal after the restart', () => renewals() > after, 5000);
    expect(held.signal.aborted).toBe(false);
    expect(await st.get('job')).toMatchObject({ owner: 'a', token: 3 });

    await held.release();
    expect(await st.tryAcquire('job', 'b', 3000)).toMatchObject({ owner: 'b', token: 4 });
  });

  it('restart without persistence: records vanish, the holder is told it lost the lease, tokens restart at 1', async () => {
    const s = await server();
    const st = await store(s);
    await cycleTo(st, 'job', 3);
    const held = (await client(st, 'a', 3000).tryAcquire('job'))!;
    expect(held.token).toBe(3);

    await s.restart();
    await waitFor('the holder to learn of the loss', () => held.signal.aborted, 5000);
    expect(held.state).toBe('lost');
    expect((held.signal.reason as LeaseError).code).toBe('LEASE_LOST');

    // The hazard the README states: without persistence, a fencing token goes backwards.
    const next = await st.tryAcquire('job', 'b', 3000);
    expect(next!.token).toBe(1);
    expect(next!.token).toBeLessThan(held.token);
  });

  it('failover to a replica that missed an acknowledged acquire: two holders with one token', async () => {
    const primary = await server();
    const replica = await server({ replicaOf: primary.port });
    const linked = async (): Promise<boolean> =>
      (await replica.cli('info', 'replication')).includes('master_link_status:up');
    await waitFor('the replica to sync', linked);
    const redis = new Redis({ host: '127.0.0.1', port: primary.port });
    cleanup.push(async () => redis.disconnect());
    const onPrimary = await RedisStore.open(redis);
    await onPrimary.release((await onPrimary.tryAcquire('job', 'a', 10_000))!);
    expect(await redis.wait(1, 1000)).toBe(1); // token 1 and the layout reached the replica

    replica.pause(); // the replica falls behind: its link is cut while it cannot reconnect
    await primary.cli('client', 'kill', 'type', 'replica');
    const b = (await onPrimary.tryAcquire('job', 'b', 10_000))!;
    expect(b.token).toBe(2); // acknowledged to the caller...
    expect(await redis.wait(1, 200)).toBe(0); // ...but held by no replica, which WAIT reveals

    await primary.kill();
    replica.resume();
    await replica.cli('replicaof', 'no', 'one'); // what a failover does
    const c = await (await store(replica)).tryAcquire('job', 'c', 10_000);
    expect(c).toMatchObject({ owner: 'c', token: 2 }); // b still believes it holds token 2
  });

  it('on a client without a command timeout, every call still ends at the store deadline; late writes may land', async () => {
    const s = await server();
    const redis = new Redis({ host: '127.0.0.1', port: s.port }); // no commandTimeout of its own
    cleanup.push(async () => redis.disconnect());
    const st = await RedisStore.open(redis, { prefix: 'bare:', commandTimeoutMs: 300 });
    cleanup.push(() => st.close());
    const timed = new Redis({ host: '127.0.0.1', port: s.port, commandTimeout: 200 });
    cleanup.push(async () => timed.disconnect());
    const driverTimed = await RedisStore.open(timed, { prefix: 'bare:', commandTimeoutMs: 300 });
    cleanup.push(() => driverTimed.close());
    const lease = (await st.tryAcquire('job', 'a', 5000))!;

    s.pause();
    let errors: LeaseError[];
    let driverError: LeaseError;
    try {
      [driverError, ...errors] = await Promise.all([
        rejection(driverTimed.tryAcquire('third', 'c', 5000), 3000),
        rejection(st.renew(lease), 3000),
        rejection(st.tryAcquire('other', 'a', 5000), 3000),
        rejection(st.release(lease), 3000),
        rejection(st.renewMany([lease]), 3000),
        rejection(st.list(), 3000),
      ]);
    } finally {
      s.resume();
    }
    for (const error of errors) {
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.retryable).toBe(true);
      expect(error.message).toContain('no answer within 300 ms');
    }
    // A client whose own command timeout is as short bounds the calls itself.
    expect(driverError.code).toBe('STORE_UNAVAILABLE');
    expect(driverError.retryable).toBe(true);
    expect(driverError.message).toMatch(/Command timed out.*may still take effect/);
    // The calls were sent: after resume the server runs them, the release included.
    await waitFor('the late release to land', async () => (await st.get('job'))?.owner === '');
    expect(await st.get('other')).toMatchObject({ owner: 'a', token: 1 });
    expect(await st.tryAcquire('job', 'b', 5000)).toMatchObject({ owner: 'b', token: 2 });
  }, 10_000);

  it('calls in flight when the server dies fail with STORE_UNAVAILABLE, then work again', async () => {
    const s = await server();
    const st = await store(s);
    const lease = (await st.tryAcquire('job', 'a', 5000))!;

    await s.kill();
    const dead = await rejection(st.renewMany([lease]));
    expect(dead.code).toBe('STORE_UNAVAILABLE');
    expect(dead.retryable).toBe(true);

    await s.restart();
    await waitFor(
      'the store to reconnect',
      async () => (await st.get('fresh').catch(() => 1)) === null,
    );
    expect(await st.tryAcquire('fresh', 'a', 5000)).toMatchObject({ token: 1 });
  }, 10_000);
});
