import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LIMITS, type Lease } from '../../src/index.js';
import { S3Store } from '../../src/stores/s3/index.js';
import { KeySpace } from '../../src/stores/s3/s3-keys.js';
import { CEPH_S3_USER, CephServer, cephUnavailable } from '../harness/ceph-server.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';

const BUCKET = 'leasehold-data';
/** A string of exactly `n` UTF-8 bytes, mostly 3-byte characters. */
const utf8Of = (n: number): string => '€'.repeat(Math.floor(n / 3)) + 'x'.repeat(n % 3);

/** What an `S3Client` sent, by command (every attempt, the SDK's retries included), and the PUT bodies. */
interface Sent {
  counts: Map<string, number>;
  bodies: string[];
}

function countingClient(endpoint: string): { client: S3Client; sent: Sent } {
  const sent: Sent = { counts: new Map(), bodies: [] };
  const client = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { ...CEPH_S3_USER },
  });
  client.middlewareStack.add(
    (next, context) => (args) => {
      const name = String(context.commandName).replace(/Command$/, '');
      sent.counts.set(name, (sent.counts.get(name) ?? 0) + 1);
      const body = (args.input as { Body?: unknown }).Body;
      if (name === 'PutObject' && typeof body === 'string') sent.bodies.push(body);
      return next(args);
    },
    // After the retry middleware (finalizeRequest), so every attempt counts.
    { step: 'deserialize', name: 'leaseholdRequestCounter' },
  );
  return { client, sent };
}

/** Lease data on S3: a member of the object's JSON body. */
describeServer('S3 lease data on Ceph radosgw', cephUnavailable(), () => {
  let ceph: CephServer;
  let client: S3Client;
  let sent: Sent;
  let store: S3Store;
  let other: S3Store;
  const shortTtl = 200;
  const prefix = `d${process.pid}`;

  beforeAll(async () => {
    ceph = await CephServer.start();
    ({ client, sent } = countingClient(ceph.endpoint));
    const options = { bucket: BUCKET, prefix, maxClockSkewMs: 0 };
    store = await S3Store.open(client, { ...options, createBucket: true });
    other = await S3Store.open(client, options);
  });
  afterAll(async () => {
    await store?.close();
    await other?.close();
    client?.destroy();
    await ceph?.stop();
  });

  /** The requests `work` sent, by command, and what it answered. */
  const counted = async <T>(work: () => Promise<T>): Promise<[T, Record<string, number>]> => {
    sent.counts.clear();
    sent.bodies.length = 0;
    const result = await work();
    return [result, Object.fromEntries(sent.counts)];
  };
  const onePut = { PutObject: 1 };

  /** The object's body as stored, parsed. */
  const raw = async (resource: string, under = store.prefix): Promise<Record<string, unknown>> => {
    const key = new KeySpace(BUCKET, under).keyOf(resource);
    const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return JSON.parse(await got.Body!.transformToString()) as Record<string, unknown>;
  };

  it('declares lease data', () => {
    expect(store.capabilities.data).toBe(true);
  });

  it('writeData, renew with data and release with data are one conditional PUT each', async () => {
    const lease = (await store.tryAcquire('rt', 'a', 60_000))!;
    expect(await counted(() => store.writeData(lease, 'w1'))).toEqual([true, onePut]);
    const [renewed, renewCount] = await counted(() => store.renew(lease, undefined, 'r1'));
    expect([renewed?.data, renewCount]).toEqual(['r1', onePut]);
    expect(await raw('rt')).toMatchObject({ owner: 'a', data: 'sr1' });
    expect(await counted(() => store.writeData(lease, null))).toEqual([true, onePut]);
    expect('data' in (await raw('rt'))).toBe(false);
    expect(await counted(() => store.release(lease, new Uint8Array([7, 8])))).toEqual([
      true,
      onePut,
    ]);
    expect(await store.get('rt')).toEqual({
      resource: 'rt',
      owner: '',
      token: lease.token,
      expiresAt: 0,
      data: new Uint8Array([7, 8]),
    });
  });

  it("one handle's racing writes of a lease's data go one after another: one PUT each", async () => {
    const lease = (await store.tryAcquire('racing', 'a', 60_000))!;
    const values = Array.from({ length: 8 }, (_, i) => `v${i}`);
    const [results, requests] = await counted(() =>
      Promise.all(values.map((v) => store.writeData(lease, v))),
    );
    expect([results, requests]).toEqual([values.map(() => true), { PutObject: 8 }]);
    expect((await store.get('racing'))?.data).toBe('v7');
  });

  it('a grant after a release and after an expiry returns the data with no request more than without', async () => {
    const first = (await store.tryAcquire('grant', 'a', 60_000))!;
    await store.release(first, 'left by a');
    // This store released it last: one PUT on that ETag, no GET.
    const [mine, mineCount] = await counted(() => store.tryAcquire('grant', 'b', shortTtl));
    expect([mine?.data, mineCount]).toEqual(['left by a', onePut]);
    await store.writeData(mine!, 'left by b');
    await sleep(shortTtl + 60);
    // Expired, taken over through another handle: a GET and a PUT, as without data.
    const [taken, takenCount] = await counted(() => other.tryAcquire('grant', 'c', 60_000));
    expect([taken?.token, taken?.data, takenCount]).toEqual([
      mine!.token + 1,
      'left by b',
      { GetObject: 1, PutObject: 1 },
    ]);
    await other.release(taken!);
    const [many, manyCount] = await counted(() => store.acquireMany(['grant'], 'd', 60_000));
    expect([many[0]!.lease?.data, manyCount]).toEqual([
      'left by b',
      { GetObject: 1, PutObject: 1 },
    ]);
  });

  it('renewMany and releaseMany without data carry the data of the record they replace, never the caller’s', async () => {
    const big = utf8Of(LIMITS.dataMaxBytes);
    const names = Array.from({ length: 10 }, (_, i) => `quiet/${i}`);
    const leases: Lease[] = [];
    for (const name of names) {
      const lease = (await store.tryAcquire(name, 'a', 60_000))!;
      await store.writeData(lease, big);
      // What the caller passes as `data` is not what a renewal writes.
      leases.push({ ...lease, data: 'not from the caller' });
    }
    const plain = (await store.tryAcquire('quiet/none', 'a', 60_000))!;
    const [, without] = await counted(() => store.renewMany([plain], 30_000));
    expect(without).toEqual(onePut);
    const bodyWithout = sent.bodies[0]!.length;
    const [renewed, withData] = await counted(() => store.renewMany(leases, 30_000));
    expect(renewed.every((l) => l !== null)).toBe(true);
    expect(withData).toEqual({ PutObject: names.length });
    // A body is written whole: each renewal carries the 4 KiB it replaces, unchanged.
    for (const body of sent.bodies) {
      expect(JSON.parse(body)).toMatchObject({ owner: 'a', data: `s${big}` });
      const extra = Buffer.byteLength(body) - bodyWithout;
      expect(extra).toBeGreaterThan(LIMITS.dataMaxBytes);
      expect(extra).toBeLessThan(LIMITS.dataMaxBytes + 40);
    }
    console.info(
      `S3 renewal PUT body: ${bodyWithout} bytes without data, ${Buffer.byteLength(sent.bodies[0]!)} bytes with ${LIMITS.dataMaxBytes} bytes of data`,
    );
    expect(await store.releaseMany(leases)).toEqual(names.map(() => true));
    for (const name of names) expect(await store.get(name)).toMatchObject({ owner: '', data: big });
    // The read path (a handle that knows no write of the grant) carries the value it read.
    const again = (await other.tryAcquire('quiet/0', 'b', 60_000))!;
    expect(await store.renew({ ...again, data: 'forged' })).not.toBeNull();
    expect((await store.get('quiet/0'))?.data).toBe(big);
  });

  it("a paused ex-holder's late write after a takeover is refused by the conditional PUT", async () => {
    const old = (await store.tryAcquire('paused', 'a', shortTtl))!;
    await store.writeData(old, 'a1');
    await sleep(shortTtl + 60);
    const taker = (await other.tryAcquire('paused', 'b', 60_000))!;
    expect(taker.data).toBe('a1');
    // The ex-holder's store still knows its last ETag: the PUT is refused, then a read shows
    // the record is no longer this grant's.
    const [late, lateCount] = await counted(() => store.writeData(old, 'a2, late'));
    expect([late, lateCount]).toEqual([false, { PutObject: 1, GetObject: 1 }]);
    expect(await store.renew(old, undefined, 'a3, late')).toBeNull();
    expect(await store.release(old, 'a4, late')).toBe(false);
    expect(await store.get('paused')).toMatchObject({ owner: 'b', token: taker.token, data: 'a1' });
  });

  it('objects written before lease data existed read with none and take data from then on', async () => {
    // Objects of the previous release: the same keys, bodies without a `data` member.
    const oldPrefix = `${prefix}-old/`;
    const keys = new KeySpace(BUCKET, oldPrefix);
    const now = Date.now();
    const put = (resource: string, body: object) =>
      client.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: keys.keyOf(resource),
          Body: JSON.stringify({ resource, ...body }),
        }),
      );
    await put('old/held', { owner: 'a', token: 4, expiresAt: now + 60_000, write: 'w4' });
    await put('old/released', { owner: '', token: 9, expiresAt: 0, write: 'w9' });
    await put('old/expired', { owner: 'z', token: 2, expiresAt: now - 10_000, write: 'w2' });
    await put('old/bad', { owner: '', token: 1, expiresAt: 0, write: 'w1', data: 42 });
    const upgraded = await S3Store.open(client, {
      bucket: BUCKET,
      prefix: oldPrefix,
      maxClockSkewMs: 0,
    });
    try {
      const held = (await upgraded.get('old/held'))!;
      expect(held).toEqual({ resource: 'old/held', owner: 'a', token: 4, expiresAt: now + 60_000 });
      expect((await upgraded.list({ prefix: 'old/e' })).map((r) => 'data' in r)).toEqual([false]);
      // The holder from before the upgrade renews, writes and releases with data.
      const lease: Lease = { ...held, ttlMs: 60_000 };
      expect((await counted(() => upgraded.renew(lease)))[1]).toEqual({
        GetObject: 1,
        PutObject: 1,
      });
      expect(await upgraded.writeData(lease, 'first value')).toBe(true);
      expect((await upgraded.renew(lease, undefined, 'second value'))?.data).toBe('second value');
      expect(await upgraded.release(lease, 'third value')).toBe(true);
      expect((await upgraded.tryAcquire('old/held', 'b', 60_000))?.data).toBe('third value');
      // Released and expired old objects are granted with no data, their tokens continued.
      const released = (await upgraded.tryAcquire('old/released', 'b', 60_000))!;
      expect([released.token, 'data' in released]).toEqual([10, false]);
      const expired = (await upgraded.tryAcquire('old/expired', 'b', 60_000))!;
      expect([expired.token, 'data' in expired]).toEqual([3, false]);
      expect(await upgraded.writeData(expired, new Uint8Array([1]))).toBe(true);
      expect(await raw('old/expired', oldPrefix)).toMatchObject({ data: 'bAQ==' });
      // A `data` member that is not leasehold's is a corrupt record, not an empty one.
      const bad = await rejection(upgraded.get('old/bad'));
      expect([bad.code, bad.retryable]).toEqual(['STORE_UNAVAILABLE', false]);
    } finally {
      await upgraded.close();
    }
  });
});
