import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type LeaseStore } from '../../src/index.js';
import {
  dynaliteUnavailable,
  startDynalite,
  startDynaliteProcess,
  type DynaliteProcess,
  type DynaliteServer,
} from '../harness/dynalite-server.js';
import { TcpProxy } from '../harness/tcp-proxy.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';

let tables = 0;
const freshTable = (): string => `ddbf_${process.pid}_${++tables}`;

describeServer('DynamoDB store faults', dynaliteUnavailable(), () => {
  describe('lost responses', () => {
    let server: DynaliteServer;
    let proxy: TcpProxy;
    const stores: LeaseStore[] = [];

    beforeAll(async () => {
      server = await startDynalite();
      proxy = await TcpProxy.start(server.port);
    });
    afterAll(async () => {
      await Promise.allSettled(stores.map((s) => s.close()));
      await proxy?.stop();
      await server?.stop();
    });

    /** One store through the proxy (1.5 s per call, so 0.5 s per SDK attempt), one direct. */
    async function pair(): Promise<{ viaProxy: LeaseStore; direct: LeaseStore }> {
      const table = freshTable();
      const direct = await openStore(server.url(table, { createTable: true }));
      const viaProxy = await openStore(
        server.url(table, {
          endpoint: `http://127.0.0.1:${proxy.port}`,
          requestTimeoutMs: 1500,
        }),
      );
      stores.push(direct, viaProxy);
      return { viaProxy, direct };
    }

    it('a renew whose answer was lost lands once, and the retry of it succeeds', async () => {
      const { viaProxy, direct } = await pair();
      const lease = (await viaProxy.tryAcquire('job', 'a', 10_000))!;
      const forwardedBefore = proxy.counts.forwarded;

      proxy.mode = 'drop-responses';
      const dropped = proxy.nextDroppedResponse();
      const renewing = viaProxy.renew(lease, 20_000);
      await dropped;
      // DynamoDB applied the renewal; its caller has not heard so.
      const landed = await direct.get('job');
      expect(landed!.expiresAt).toBeGreaterThan(lease.expiresAt);
      proxy.mode = 'pass';

      // The SDK's attempt times out and it sends the same update again: same owner, same token.
      const renewed = await renewing;
      expect(renewed).toMatchObject({ resource: 'job', owner: 'a', token: 1, ttlMs: 20_000 });
      expect(proxy.counts.forwarded - forwardedBefore).toBeGreaterThanOrEqual(2);
      expect(await direct.get('job')).toEqual({
        resource: 'job',
        owner: 'a',
        token: 1,
        expiresAt: renewed!.expiresAt,
      });
    });

    it('an acquire and a release whose answers were lost are recognised on the retry', async () => {
      const { viaProxy, direct } = await pair();
      await direct.release((await direct.tryAcquire('job', 'x', 5000))!); // token 1, released

      proxy.mode = 'drop-responses';
      let dropped = proxy.nextDroppedResponse();
      const acquiring = viaProxy.tryAcquire('job', 'a', 10_000);
      await dropped;
      proxy.mode = 'pass';
      // The retry finds the lease held (by this very request): it reads the record back.
      const lease = await acquiring;
      expect(lease).toMatchObject({ owner: 'a', token: 2 });
      expect(await direct.get('job')).toEqual({
        resource: 'job',
        owner: 'a',
        token: 2,
        expiresAt: lease!.expiresAt,
      });
      expect(await direct.tryAcquire('job', 'b', 5000)).toBeNull();

      proxy.mode = 'drop-responses';
      dropped = proxy.nextDroppedResponse();
      const releasing = viaProxy.release(lease!);
      await dropped;
      proxy.mode = 'pass';
      expect(await releasing).toBe(true);
      expect(await viaProxy.release(lease!)).toBe(false); // a second, separate release
      expect(await direct.get('job')).toMatchObject({ owner: '', token: 2, expiresAt: 0 });
    });

    it('a renew that timed out for its caller after landing succeeds when the caller retries', async () => {
      const { viaProxy, direct } = await pair();
      const lease = (await viaProxy.tryAcquire('job', 'a', 10_000))!;

      proxy.mode = 'drop-responses';
      // No answer ever comes: only the deadline can end the call (the guard is for a hang).
      const error = await rejection(viaProxy.renew(lease, 20_000));
      proxy.mode = 'pass';
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.retryable).toBe(true);
      expect(error.message).toContain('no answer within 1500 ms');
      expect((await direct.get('job'))!.expiresAt).toBeGreaterThan(lease.expiresAt);

      const retried = await viaProxy.renew(lease, 20_000);
      expect(retried).toMatchObject({ owner: 'a', token: 1 });
      expect(await direct.get('job')).toMatchObject({ owner: 'a', token: 1 });
    });
  });

  describe('an unreachable or frozen endpoint', () => {
    let child: DynaliteProcess;

    beforeAll(async () => {
      child = await startDynaliteProcess();
    });
    afterAll(async () => {
      child?.resume();
      await child?.stop();
    });

    it('a server paused mid-flight: calls fail by their deadline while it is paused, then work again', async () => {
      const store = await openStore(
        child.url(freshTable(), { createTable: true, requestTimeoutMs: 1000 }),
      );
      try {
        const lease = (await store.tryAcquire('job', 'a', 30_000))!;
        child.pause();
        try {
          for (const call of [
            () => store.renew(lease),
            () => store.renewMany([lease]),
            () => store.tryAcquire('other', 'b', 5000),
            () => store.get('job'),
          ]) {
            const error = await rejection(call());
            expect(error.code).toBe('STORE_UNAVAILABLE');
            expect(error.retryable).toBe(true);
            expect(error.message).toContain('DynamoDB');
            // Ended by the store's deadline, not by the SDK's own attempt timeouts (about 3 s here).
            expect(error.message).toContain('no answer within 1000 ms');
          }
        } finally {
          child.resume();
        }
        expect(await store.renew(lease)).toMatchObject({ owner: 'a', token: 1 });
        expect(await store.get('job')).toMatchObject({ owner: 'a', token: 1 });
      } finally {
        await store.close();
      }
    });
  });
});
