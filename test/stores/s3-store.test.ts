import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseError } from '../../src/index.js';
import { LeaseClient, type Lease, type LeaseStore } from '../../src/index.js';
import { S3Store } from '../../src/stores/s3/index.js';
import { CEPH_S3_USER, CephServer, cephUnavailable } from '../harness/ceph-server.js';
import { describeServer } from '../harness/describe-server.js';
import { waitFor } from '../harness/processes.js';
import { rejection, settled, sleep } from '../harness/expect-error.js';
import { TcpProxy } from '../harness/tcp-proxy.js';
import { runCli } from '../cli/run-cli.js';
import { awsRelay, type AwsRelay } from '../harness/aws-relay.js';

const BUCKET = 'leasehold-store';
let prefixes = 0;
const freshPrefix = (): string => `t${process.pid}-${++prefixes}`;

/** How a call ended, and after how long: a deadline must end it, never a hang. */
/** How a call failed: a `LeaseError`, and never a hang (the guard is far above any deadline here). */
async function outcome(promise: Promise<unknown>): Promise<{ error: LeaseError }> {
  return { error: await rejection(promise) };
}

/** An `S3Client` that counts the HTTP requests it sends by command, the SDK's retries included. */
function countingClient(endpoint: string): { client: S3Client; counts: Map<string, number> } {
  const counts = new Map<string, number>();
  const client = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { ...CEPH_S3_USER },
  });
  client.middlewareStack.add(
    (next, context) => (args) => {
      const name = String(context.commandName).replace(/Command$/, '');
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return next(args);
    },
    // After the retry middleware (finalizeRequest), so every attempt counts.
    { step: 'deserialize', name: 'leaseholdRequestCounter' },
  );
  return { client, counts };
}

/**
 * An HTTP relay on loopback in front of radosgw that can lose an answer: the request reaches the
 * server and is carried out, then the relay resets the client's connection instead of answering
 * (what a dropped connection does to a response in flight). Whole HTTP messages, unlike a TCP
 * proxy dropping chunks, so exactly one chosen request loses its answer.
 */
async function lossyRelay(target: string): Promise<{
  endpoint: string;
  lost: number;
  loseNext(method: string): void;
  close(): Promise<void>;
}> {
  let lose: string | undefined;
  const state = { lost: 0 };
  const server: Server = createServer((incoming, answer) => {
    const dropThis = lose !== undefined && incoming.method === lose;
    if (dropThis) lose = undefined;
    const upstream = request(
      `${target}${incoming.url ?? '/'}`,
      { method: incoming.method, headers: incoming.headers },
      (reply) => {
        if (dropThis) {
          reply.resume();
          reply.on('end', () => {
            state.lost++;
            answer.socket?.resetAndDestroy();
          });
          return;
        }
        answer.writeHead(reply.statusCode ?? 502, reply.headers);
        reply.pipe(answer);
      },
    );
    upstream.on('error', () => answer.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    get lost() {
      return state.lost;
    },
    loseNext: (method) => {
      lose = method;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describeServer('S3 store on Ceph radosgw', cephUnavailable(), () => {
  let ceph: CephServer;
  const stores: LeaseStore[] = [];
  const clients: S3Client[] = [];

  beforeAll(async () => {
    ceph = await CephServer.start();
  });
  afterAll(async () => {
    await Promise.allSettled(stores.map((s) => s.close()));
    for (const c of clients) c.destroy();
    await ceph?.stop();
  });

  it('a renewal that lands after a newer one never moves expiresAt backwards, and still succeeds', async () => {
    const prefix = freshPrefix();
    const t0 = 1_800_000_000_000;
    const older = { now: () => t0 };
    const newer = { now: () => t0 };
    const a = await open(prefix, {}, { clock: older });
    const b = await open(prefix, {}, { clock: newer });
    const lease = (await a.tryAcquire('job', 'holder', 2000))!;
    newer.now = () => t0 + 1500; // the newer renewal (another handle of the holder) lands first
    expect(await b.renew(lease)).toMatchObject({ expiresAt: t0 + 3500 });
    older.now = () => t0 + 500; // the older one, computed earlier, lands after it
    expect(await a.renew(lease)).toMatchObject({ owner: 'holder', token: 1, expiresAt: t0 + 3500 });
    expect((await b.get('job'))!.expiresAt).toBe(t0 + 3500);
    expect(await a.renew({ ...lease, token: 2 })).toBeNull();
  });

  it('leasehold run and the demo work with --store s3://…', async () => {
    const url = ceph.url(BUCKET, freshPrefix(), { createBucket: true, maxClockSkewMs: 100 });
    const run = await runCli(
      [
        'run',
        'nightly',
        '--store',
        url,
        '--ttl',
        '5s',
        '--',
        process.execPath,
        '-e',
        'console.log("token " + process.env.LEASEHOLD_TOKEN)',
      ],
      { timeout: 30_000 },
    );
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('token 1\n');
    expect(run.code).toBe(0);
    const again = await runCli(
      [
        'run',
        'nightly',
        '--store',
        url,
        '--ttl',
        '5s',
        '--',
        process.execPath,
        '-e',
        'console.log("token " + process.env.LEASEHOLD_TOKEN)',
      ],
      { timeout: 30_000 },
    );
    expect(again.stdout).toBe('token 2\n'); // released, never deleted: the token goes on
    const demo = await runCli(
      [
        'demo',
        '--quick',
        '--json',
        '--store',
        ceph.url(BUCKET, freshPrefix(), { maxClockSkewMs: 100 }),
      ],
      {
        timeout: 60_000,
      },
    );
    const report = JSON.parse(demo.stdout) as { ok: boolean; safe: boolean; recovered: boolean };
    expect(report).toMatchObject({ ok: true, safe: true, recovered: true });
    expect(demo.code).toBe(0);
  }, 90_000);

  async function open(
    prefix: string,
    params: Record<string, string | number | boolean> = {},
    options: Parameters<typeof S3Store.open>[1] = {},
  ): Promise<S3Store> {
    const store = await S3Store.open(
      ceph.url(BUCKET, prefix, { createBucket: true, maxClockSkewMs: 100, ...params }),
      options,
    );
    stores.push(store);
    return store;
  }

  /** The object body as stored, read with a client of its own. */
  async function rawObject(key: string): Promise<Record<string, unknown> | null> {
    const { client } = countingClient(ceph.endpoint);
    clients.push(client);
    try {
      const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      return JSON.parse(await got.Body!.transformToString()) as Record<string, unknown>;
    } catch (error) {
      if ((error as { name?: string }).name === 'NoSuchKey') return null;
      throw error;
    }
  }

  describe('conditional writes', () => {
    it('passes the start-up probe, which finds that radosgw wants If-Match unquoted', async () => {
      const store = await open(freshPrefix());
      expect(store.ifMatchForm).toBe('bare');
      expect(store.capabilities).toEqual({
        clock: 'local',
        batch: false,
        watch: false,
        atomicGroupMax: 0,
        data: true,
      });
      // The probe object is gone, and a fresh store lists nothing.
      expect(await store.list()).toEqual([]);
    });

    it('20 racing acquirers on 20 handles: exactly one wins each round, tokens rising', async () => {
      const prefix = freshPrefix();
      const handles = await Promise.all(Array.from({ length: 20 }, () => open(prefix)));
      let previous = 0;
      for (let round = 0; round < 3; round++) {
        const results = await Promise.all(
          handles.map((store, i) => store.tryAcquire('race', `w${i}`, 10_000)),
        );
        const winners = results.filter((lease): lease is Lease => lease !== null);
        expect(winners).toHaveLength(1);
        const winner = winners[0]!;
        expect(winner.token).toBe(previous + 1);
        expect(await handles[0]!.get('race')).toEqual({
          resource: 'race',
          owner: winner.owner,
          token: winner.token,
          expiresAt: winner.expiresAt,
        });
        const holderIndex = Number(winner.owner.slice(1));
        expect(await handles[holderIndex]!.release(winner)).toBe(true);
        previous = winner.token;
      }
    });

    it('tokens rise across release and expiry; release keeps the object and its token', async () => {
      const prefix = freshPrefix();
      const store = await open(prefix);
      const first = (await store.tryAcquire('job/1 a', 'a', 5000))!;
      expect(first.token).toBe(1);
      expect(await store.release(first)).toBe(true);
      // Never deleted: the object stays, owner empty, token kept; the key escapes "/" and " ".
      expect(await rawObject(`${prefix}/job!2f1!20a`)).toMatchObject({
        resource: 'job/1 a',
        owner: '',
        token: 1,
        expiresAt: 0,
      });
      const second = (await store.tryAcquire('job/1 a', 'b', 300))!;
      expect(second.token).toBe(2);
      expect(await store.tryAcquire('job/1 a', 'c', 300)).toBeNull();
      await sleep(300 + store.maxClockSkewMs + 100);
      const third = (await store.tryAcquire('job/1 a', 'c', 5000))!;
      expect(third.token).toBe(3);
      // The expired holder can neither renew nor release what changed hands.
      expect(await store.renew(second)).toBeNull();
      expect(await store.release(second)).toBe(false);
      const reopened = await open(prefix);
      expect(await reopened.get('job/1 a')).toMatchObject({ owner: 'c', token: 3 });
    });

    it('judges expiry on the local clock, waiting out maxClockSkewMs on top of expiresAt', async () => {
      const prefix = freshPrefix();
      let now = 1_000_000;
      const clock = { now: () => now };
      const store = await open(prefix, { maxClockSkewMs: 500 }, { clock });
      const lease = (await store.tryAcquire('skew', 'a', 1000))!;
      expect(lease.expiresAt).toBe(1_001_000);
      now = 1_001_500; // expired by the holder's clock, not past the skew allowance
      expect(await store.tryAcquire('skew', 'b', 1000)).toBeNull();
      now = 1_001_501;
      expect(await store.tryAcquire('skew', 'b', 1000)).toMatchObject({ owner: 'b', token: 2 });
    });
  });

  describe('requests per transition, counted on an S3Client you pass', () => {
    it('acquire is a GET and a PUT; renew and release one PUT; list one LIST and a GET each', async () => {
      const { client, counts } = countingClient(ceph.endpoint);
      clients.push(client);
      const requestsOf = async (work: () => Promise<unknown>): Promise<Record<string, number>> => {
        counts.clear();
        await work();
        return Object.fromEntries(counts);
      };
      const prefix = freshPrefix();
      let store: S3Store | undefined;
      // Probe: create, create again (refused), If-Match quoted (refused here) and bare, If-Match
      // stale (refused), a read of the result, and the delete of the probe object.
      expect(
        await requestsOf(async () => {
          store = await S3Store.open(client, { bucket: BUCKET, prefix, maxClockSkewMs: 0 });
        }),
      ).toEqual({ PutObject: 5, GetObject: 1, DeleteObject: 1 });
      const s = store!;
      stores.push(s);
      let lease: Lease | null = null;
      expect(
        await requestsOf(async () => {
          lease = await s.tryAcquire('job', 'a', 5000);
        }),
      ).toEqual({ GetObject: 1, PutObject: 1 });
      expect(await requestsOf(() => s.tryAcquire('job', 'b', 5000))).toEqual({ GetObject: 1 });
      let renewed: Lease | null = null;
      expect(
        await requestsOf(async () => {
          renewed = await s.renew(lease!, 8000);
        }),
      ).toEqual({ PutObject: 1 });
      expect(renewed).toMatchObject({ owner: 'a', token: 1, ttlMs: 8000 });
      expect(await requestsOf(() => s.renew({ ...lease!, owner: 'b' }))).toEqual({ GetObject: 1 });
      // Another handle never wrote the record: it reads the ETag first.
      const other = await S3Store.open(client, { bucket: BUCKET, prefix, maxClockSkewMs: 0 });
      stores.push(other);
      expect(await requestsOf(() => other.renew(renewed!))).toEqual({
        GetObject: 1,
        PutObject: 1,
      });
      // This handle's remembered ETag is stale now: one refused PUT, a read, a PUT.
      expect(await requestsOf(() => s.release(renewed!))).toEqual({ PutObject: 2, GetObject: 1 });
      expect(await requestsOf(() => s.release(renewed!))).toEqual({ GetObject: 1 });
      // This handle released it last: the next grant is one PUT on that ETag, no GET.
      let again: Lease | null = null;
      expect(
        await requestsOf(async () => {
          again = await s.tryAcquire('job', 'c', 5000);
        }),
      ).toEqual({ PutObject: 1 });
      expect(again).toMatchObject({ owner: 'c', token: 2 });
      expect(await requestsOf(() => s.release(again!))).toEqual({ PutObject: 1 });
      // Another handle wrote it since: the PUT on the old ETag is refused, then a GET and a PUT.
      const elsewhere = (await other.tryAcquire('job', 'd', 5000))!;
      expect(elsewhere).toMatchObject({ token: 3 });
      await other.release(elsewhere);
      let after: Lease | null = null;
      expect(
        await requestsOf(async () => {
          after = await s.tryAcquire('job', 'c', 5000);
        }),
      ).toEqual({ PutObject: 2, GetObject: 1 });
      expect(after).toMatchObject({ owner: 'c', token: 4 });
      await s.tryAcquire('job2', 'a', 5000);
      await s.tryAcquire('job3', 'a', 5000);
      expect(await requestsOf(() => s.list())).toEqual({ ListObjectsV2: 1, GetObject: 3 });
      // The client stays yours after close.
      await s.close();
      await other.close();
      const listed = await client.send(
        new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${prefix}/` }),
      );
      expect(listed.Contents?.map((c) => c.Key)).toEqual([
        `${prefix}/job`,
        `${prefix}/job2`,
        `${prefix}/job3`,
      ]);
    });
  });

  describe('credentials and configuration', () => {
    it('keys in the URL never appear in a message', async () => {
      const url = ceph
        .url(BUCKET, freshPrefix())
        .replace(CEPH_S3_USER.secretAccessKey, 'not-the-secret-x9');
      const { error } = await outcome(S3Store.open(url));
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain('SignatureDoesNotMatch');
      for (const secret of ['not-the-secret-x9', CEPH_S3_USER.accessKeyId])
        expect(error.message).not.toContain(secret);
      const typo = await outcome(S3Store.open(`${ceph.url(BUCKET, 'x')}&regoin=us-east-1`));
      expect(typo.error.code).toBe('STORE_URL_INVALID');
      expect(typo.error.message).toContain('s3://***@leasehold-store/x');
      for (const secret of [CEPH_S3_USER.secretAccessKey, CEPH_S3_USER.accessKeyId])
        expect(typo.error.message).not.toContain(secret);
    });

    it('a missing bucket is a lasting STORE_UNAVAILABLE that says how to create it', async () => {
      const { error } = await outcome(
        S3Store.open(ceph.url('leasehold-nobucket', '', { createBucket: false })),
      );
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.retryable).toBe(false);
      expect(error.message).toMatch(/bucket does not exist.*createBucket=true/);
    });
  });

  describe('the hot requests by the wire', () => {
    let relay: AwsRelay;
    beforeAll(async () => {
      relay = await awsRelay(ceph);
    });
    afterAll(() => relay?.close());

    /** A store opened from a URL through the relay; the relay's record starts after its open. */
    async function relayed(
      params: Record<string, string | number | boolean> = {},
      prefix = freshPrefix(),
    ): Promise<S3Store> {
      relay.intercept = undefined;
      const store = await open(prefix, { endpoint: relay.endpoint, ...params });
      relay.clear();
      return store;
    }
    /** Sent by the SDK: it numbers every invocation; the wire sends no such header. */
    const bySdk = (headers: Record<string, unknown>): boolean => 'amz-sdk-invocation-id' in headers;
    const paths = (): string[] =>
      relay.requests.map((r) => `${r.method} ${bySdk(r.headers) ? 'sdk' : 'wire'}`);

    it('a store opened from a URL reads and writes records by the wire, signed as radosgw checks; fastPath=false through the SDK', async () => {
      const store = await relayed();
      const name = "jobs/ünï (1)*!'~%";
      const lease = (await store.tryAcquire(name, 'a', 5000))!;
      expect(lease).toMatchObject({ resource: name, owner: 'a', token: 1 });
      expect(await store.renew(lease)).toMatchObject({ token: 1 });
      expect(await store.get(name)).toMatchObject({ owner: 'a', token: 1 });
      expect(await store.release(lease)).toBe(true);
      expect(await store.tryAcquire(name, 'b', 5000)).toMatchObject({ owner: 'b', token: 2 });
      expect(paths()).toEqual([
        'GET wire', // acquire: read, then the conditional create
        'PUT wire',
        'PUT wire', // renew and release: one PUT each (this store made the last write)
        'GET wire', // get
        'PUT wire', // release
        'PUT wire', // the second acquire: one PUT, as this store made the last write
      ]);
      expect(relay.requests.every((r) => r.url.startsWith(`/${BUCKET}/`))).toBe(true);

      const slow = await relayed({ fastPath: false });
      const other = (await slow.tryAcquire('job', 'a', 5000))!;
      expect(await slow.release(other)).toBe(true);
      expect(paths()).toEqual(['GET sdk', 'PUT sdk', 'PUT sdk']);
    });

    it('a stale If-Match by the wire is refused as through the SDK: a takeover is never undone', async () => {
      const prefix = freshPrefix();
      const a = await relayed({}, prefix);
      const other = await open(prefix);
      const lease = (await a.tryAcquire('job', 'a', 200))!;
      await sleep(400); // past its TTL and the skew allowance (100 ms)
      expect(await other.tryAcquire('job', 'c', 5000)).toMatchObject({ owner: 'c', token: 2 });
      relay.clear();
      expect(await a.renew(lease)).toBeNull(); // its PUT names the ETag it wrote: refused
      expect(relay.requests.filter((r) => r.method === 'PUT').map((r) => bySdk(r.headers))).toEqual(
        [false],
      );
      expect(await a.release(lease)).toBe(false);
      expect(await other.get('job')).toMatchObject({ owner: 'c', token: 2 });
    });

    it('an endpoint that refuses the wire’s signature but takes the SDK’s: the call goes again through the SDK, and so does every later one', async () => {
      const store = await relayed();
      relay.intercept = ({ headers }) =>
        bySdk(headers)
          ? undefined
          : {
              status: 400,
              body: '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed</Message></Error>',
            };
      const lease = (await store.tryAcquire('job', 'a', 5000))!;
      expect(lease).toMatchObject({ owner: 'a', token: 1 });
      expect(await store.release(lease)).toBe(true);
      // The first GET finds no object: a NoSuchKey from the SDK is an answer too, so the wire
      // is off from there on.
      expect(paths()).toEqual(['GET wire', 'GET sdk', 'PUT sdk', 'PUT sdk']);
      relay.intercept = undefined;
      expect(await store.get('job')).toMatchObject({ owner: '', token: 1, expiresAt: 0 });
    });

    it('throttling by the wire is retried; a slow-down to the end fails retryable, naming it, and writes nothing', async () => {
      const store = await relayed();
      let refusals = 1;
      const slowDown = {
        status: 503,
        body: '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>',
      };
      relay.intercept = ({ method }) => (method === 'PUT' && refusals-- > 0 ? slowDown : undefined);
      const lease = (await store.tryAcquire('job', 'a', 5000))!;
      expect(lease).toMatchObject({ owner: 'a', token: 1 });
      expect(paths()).toEqual(['GET wire', 'PUT wire', 'PUT wire']);
      refusals = Infinity;
      relay.clear();
      const { error } = await outcome(store.renew(lease));
      expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: true });
      expect(error.message).toMatch(/SlowDown|reduce your request rate/);
      relay.intercept = undefined;
      expect(await store.get('job')).toMatchObject({ owner: 'a', token: 1 });
    });
  });

  describe('faults', () => {
    let proxy: TcpProxy;
    beforeAll(async () => {
      proxy = await TcpProxy.start(ceph.rgwPort);
    });
    afterAll(async () => {
      await proxy?.stop();
    });

    /** One store through the proxy (1.5 s per call, so 0.5 s per SDK attempt), one direct. */
    async function pair(): Promise<{ viaProxy: S3Store; direct: S3Store }> {
      const prefix = freshPrefix();
      const direct = await open(prefix);
      const viaProxy = await open(prefix, {
        endpoint: `http://127.0.0.1:${proxy.port}`,
        requestTimeoutMs: 1500,
      });
      return { viaProxy, direct };
    }

    it('a renew whose answer was lost is recognised on the retry by reading it back', async () => {
      const { viaProxy, direct } = await pair();
      const lease = (await viaProxy.tryAcquire('job', 'a', 10_000))!;
      const forwardedBefore = proxy.counts.forwarded;
      proxy.mode = 'drop-responses';
      const dropped = proxy.nextDroppedResponse();
      const renewing = viaProxy.renew(lease, 20_000);
      await dropped;
      proxy.mode = 'pass';
      // radosgw applied the renewal; its caller has not heard so.
      expect((await direct.get('job'))!.expiresAt).toBeGreaterThan(lease.expiresAt);
      const renewed = await renewing;
      expect(renewed).toMatchObject({ resource: 'job', owner: 'a', token: 1, ttlMs: 20_000 });
      expect(proxy.counts.forwarded - forwardedBefore).toBeGreaterThanOrEqual(2);
      expect(await direct.get('job')).toEqual({
        resource: 'job',
        owner: 'a',
        token: 1,
        expiresAt: renewed!.expiresAt,
      });
      expect(await direct.tryAcquire('job', 'b', 5000)).toBeNull();
    });

    it('a release whose answer was lost is recognised on the retry', async () => {
      const { viaProxy, direct } = await pair();
      const lease = (await viaProxy.tryAcquire('job', 'a', 10_000))!;
      // The store wrote the record last, so the release is one conditional PUT: drop its answer.
      proxy.mode = 'drop-responses';
      const dropped = proxy.nextDroppedResponse();
      const releasing = viaProxy.release(lease);
      await dropped;
      proxy.mode = 'pass';
      expect(await releasing).toBe(true);
      expect(await direct.get('job')).toMatchObject({ owner: '', token: 1, expiresAt: 0 });
      expect(await viaProxy.release(lease)).toBe(false); // a second, separate release
    });

    it('an acquire whose PUT landed but whose answer was lost is recognised by reading it back', async () => {
      const relay = await lossyRelay(ceph.endpoint);
      try {
        const prefix = freshPrefix();
        const direct = await open(prefix);
        const viaRelay = await open(prefix, { endpoint: relay.endpoint, requestTimeoutMs: 3000 });
        await direct.release((await direct.tryAcquire('job', 'x', 5000))!); // token 1, released
        for (const expected of [2, 3]) {
          const lostBefore = relay.lost;
          relay.loseNext('PUT');
          const lease = await viaRelay.tryAcquire('job', 'a', 10_000);
          expect(relay.lost).toBe(lostBefore + 1);
          // The SDK sent the PUT again, radosgw refused it (412: the ETag had changed), and the
          // store found its own write when it read the object back.
          expect(lease).toMatchObject({ owner: 'a', token: expected });
          expect(await direct.get('job')).toMatchObject({ owner: 'a', token: expected });
          expect(await direct.tryAcquire('job', 'b', 5000)).toBeNull();
          relay.loseNext('PUT');
          expect(await viaRelay.release(lease!)).toBe(true);
        }
        expect(relay.lost).toBe(4);
      } finally {
        await relay.close();
      }
    });

    it('a renew that timed out for its caller after landing succeeds when retried', async () => {
      const { viaProxy, direct } = await pair();
      const lease = (await viaProxy.tryAcquire('job', 'a', 10_000))!;
      proxy.mode = 'drop-responses';
      // No answer ever comes: only the deadline can end the call.
      const { error } = await outcome(viaProxy.renew(lease, 20_000));
      proxy.mode = 'pass';
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.retryable).toBe(true);
      expect(error.message).toContain('no answer within 1500 ms');
      expect((await direct.get('job'))!.expiresAt).toBeGreaterThan(lease.expiresAt);
      expect(await viaProxy.renew(lease, 20_000)).toMatchObject({ owner: 'a', token: 1 });
    });

    it('radosgw paused under a holder: every call fails by its deadline while paused, then works again', async () => {
      const store = await open(freshPrefix(), { requestTimeoutMs: 1000 });
      const lease = (await store.tryAcquire('job', 'a', 30_000))!;
      ceph.pause();
      try {
        for (const call of [
          () => store.renew(lease),
          () => store.renewMany([lease]),
          () => store.tryAcquire('other', 'b', 5000),
          () => store.get('job'),
          () => store.list(),
        ]) {
          // Settled while radosgw is still paused, by the store's deadline (not the SDK's own
          // attempt timeouts, which end later).
          const { error } = await outcome(call());
          expect(error.code).toBe('STORE_UNAVAILABLE');
          expect(error.retryable).toBe(true);
          expect(error.message).toContain('S3');
          expect(error.message).toContain('no answer within 1000 ms');
        }
      } finally {
        ceph.resume();
      }
      expect(await store.renew(lease)).toMatchObject({ owner: 'a', token: 1 });
      expect(await store.get('job')).toMatchObject({ owner: 'a', token: 1 });
    });

    it('radosgw killed and restarted under a holder: the lease and its token carry on', async () => {
      const prefix = freshPrefix();
      const store = await open(prefix, { requestTimeoutMs: 1500 });
      const client = new LeaseClient({ store, owner: 'holder', ttlMs: 6000, heartbeatMs: 500 });
      try {
        const held = await client.tryAcquire('job');
        expect(held).not.toBeNull();
        const risks: string[] = [];
        held!.on('at-risk', (reason) => risks.push(reason));
        await ceph.kill();
        const { error } = await outcome(store.get('job'));
        expect(error.code).toBe('STORE_UNAVAILABLE');
        expect(error.retryable).toBe(true);
        await waitFor('a heartbeat to fail', () => risks.some((r) => /renewal failed/.test(r)));
        await ceph.launch();
        expect(held!.signal.aborted).toBe(false);
        // A heartbeat after the restart extends the lease again.
        const before = (await store.get('job'))!.expiresAt;
        await waitFor(
          'a renewal after the restart',
          async () => (await store.get('job'))!.expiresAt > before,
          15_000,
          100,
        );
        expect(held!.signal.aborted).toBe(false);
        const rival = await open(prefix);
        expect(await rival.tryAcquire('job', 'rival', 5000)).toBeNull();
        await held!.release();
        expect(await rival.tryAcquire('job', 'rival', 5000)).toMatchObject({ token: 2 });
      } finally {
        await client.close();
      }
    });

    it('a holder whose store stays paused past its deadline loses the lease, and a peer takes it after', async () => {
      const prefix = freshPrefix();
      const store = await open(prefix, { requestTimeoutMs: 500 });
      const client = new LeaseClient({ store, owner: 'holder', ttlMs: 1500, heartbeatMs: 300 });
      try {
        const held = (await client.tryAcquire('job'))!;
        const lost = new Promise((resolve) => held.on('lost', resolve));
        ceph.pause();
        try {
          await settled(lost); // at its deadline, while radosgw is still paused
          expect(held.signal.aborted).toBe(true);
          expect(held.isValid()).toBe(false);
        } finally {
          ceph.resume();
        }
        // A renew sent while radosgw was frozen may still land when it thaws (it did not fail,
        // its answer came too late): the peer then waits for that expiry, and never sooner.
        const peer = await open(prefix);
        let taken: Lease | null = null;
        await waitFor('the peer to take the lease', async () => {
          taken = await peer.tryAcquire('job', 'peer', 5000);
          return taken !== null;
        });
        expect(taken).toMatchObject({ owner: 'peer', token: held.token + 1 });
      } finally {
        await client.close();
      }
    });
  });
});
