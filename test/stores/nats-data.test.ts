import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LIMITS, type Lease } from '../../src/index.js';
import { NatsStore } from '../../src/stores/nats/index.js';
import { keyOf } from '../../src/stores/nats/nats-keys.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';
import { NatsServer, natsUnavailable } from '../harness/nats-server.js';

/** A string of exactly `n` UTF-8 bytes, mostly 3-byte characters. */
const utf8Of = (n: number): string => '€'.repeat(Math.floor(n / 3)) + 'x'.repeat(n % 3);

/**
 * Lease data on NATS KV: a member of the key's JSON value. Requests are counted by the server (its
 * monitoring endpoint reports the messages and bytes each connection sent; every JetStream request
 * is one message).
 */
describeServer('NATS lease data', natsUnavailable(), () => {
  let server: NatsServer;
  let store: NatsStore;
  let other: NatsStore;
  const shortTtl = 150;
  const bucket = 'data';

  beforeAll(async () => {
    server = await NatsServer.start();
    store = await NatsStore.open(`${server.url}?bucket=${bucket}&maxClockSkewMs=0`);
    other = await NatsStore.open(`${server.url}?bucket=${bucket}&maxClockSkewMs=0`);
  });
  afterAll(async () => {
    await store?.close();
    await other?.close();
    await server?.stop();
  });

  /** Messages and payload bytes the server received while `work` ran. */
  const sent = <T>(work: () => Promise<T>): Promise<{ result: T; msgs: number; bytes: number }> =>
    server.receivedDuring(work);
  const messages = async (work: () => Promise<unknown>): Promise<number> => (await sent(work)).msgs;

  /** The key's value as stored, parsed. */
  const raw = async (resource: string): Promise<Record<string, unknown>> => {
    const nc = await connect({ servers: `127.0.0.1:${server.port}` });
    try {
      const kv = await new Kvm(jetstream(nc)).open(bucket);
      const entry = await kv.get(keyOf(resource));
      return JSON.parse(new TextDecoder().decode(entry!.value)) as Record<string, unknown>;
    } finally {
      await nc.close();
    }
  };

  it('declares lease data', () => {
    expect(store.capabilities.data).toBe(true);
  });

  it('writeData, renew with data and release with data are one conditional write each', async () => {
    const lease = (await store.tryAcquire('rt', 'a', 60_000))!;
    expect(await sent(() => store.writeData(lease, 'w1'))).toMatchObject({ result: true, msgs: 1 });
    const renewed = await sent(() => store.renew(lease, undefined, 'r1'));
    expect([renewed.result?.data, renewed.msgs]).toEqual(['r1', 1]);
    expect(await raw('rt')).toMatchObject({ owner: 'a', data: 'sr1' });
    expect(await sent(() => store.writeData(lease, null))).toMatchObject({ result: true, msgs: 1 });
    expect('data' in (await raw('rt'))).toBe(false);
    const released = await sent(() => store.release(lease, new Uint8Array([7, 8])));
    expect([released.result, released.msgs]).toEqual([true, 1]);
    expect(await store.get('rt')).toEqual({
      resource: 'rt',
      owner: '',
      token: lease.token,
      expiresAt: 0,
      data: new Uint8Array([7, 8]),
    });
    expect(await raw('rt')).toMatchObject({ data: `b${Buffer.from([7, 8]).toString('base64')}` });
  });

  it("one handle's racing writes of a lease's data go one after another: one write each", async () => {
    const lease = (await store.tryAcquire('racing', 'a', 60_000))!;
    const values = Array.from({ length: 8 }, (_, i) => `v${i}`);
    const raced = await sent(() => Promise.all(values.map((v) => store.writeData(lease, v))));
    expect([raced.result, raced.msgs]).toEqual([values.map(() => true), 8]);
    expect((await store.get('racing'))?.data).toBe('v7');
  });

  it('a grant after a release and after an expiry returns the data with no request more than without', async () => {
    const first = (await store.tryAcquire('grant', 'a', 60_000))!;
    await store.release(first, 'left by a');
    // This store released it last: one conditional write on that revision, no read.
    const mine = await sent(() => store.tryAcquire('grant', 'b', shortTtl));
    expect([mine.result?.data, mine.msgs]).toEqual(['left by a', 1]);
    await store.writeData(mine.result!, 'left by b');
    await sleep(shortTtl + 60);
    // Expired, taken over through another handle: a read and a write, as without data.
    const taken = await sent(() => other.tryAcquire('grant', 'c', 60_000));
    expect([taken.result?.token, taken.result?.data, taken.msgs]).toEqual([
      mine.result!.token + 1,
      'left by b',
      2,
    ]);
    await other.release(taken.result!);
    const many = await sent(() => store.acquireMany(['grant'], 'd', 60_000));
    expect([many.result[0]!.lease?.data, many.msgs]).toEqual(['left by b', 2]);
  });

  it('renewMany and releaseMany without data carry the data of the revision they replace, never the caller’s', async () => {
    const big = utf8Of(LIMITS.dataMaxBytes);
    const names = Array.from({ length: 20 }, (_, i) => `quiet/${i}`);
    const leases: Lease[] = [];
    for (const name of names) {
      const lease = (await store.tryAcquire(name, 'a', 60_000))!;
      await store.writeData(lease, big);
      // What the caller passes as `data` is not what a renewal writes.
      leases.push({ ...lease, data: 'not from the caller' });
    }
    const plain = (await store.acquireMany(['quiet/none'], 'a', 60_000))[0]!.lease!;
    const withData = await sent(() => store.renewMany(leases, 30_000));
    expect(withData.msgs).toBe(names.length);
    const without = await sent(() => store.renewMany([plain], 30_000));
    expect(without.msgs).toBe(1);
    // A value is written whole: each renewal carries the 4 KiB it replaces (about 4 KiB more on
    // the wire per renewal than without data), unchanged.
    const perRenewal = withData.bytes / names.length;
    expect(perRenewal - without.bytes).toBeGreaterThan(LIMITS.dataMaxBytes);
    expect(perRenewal - without.bytes).toBeLessThan(LIMITS.dataMaxBytes + 100);
    console.info(
      `NATS renewal request: ${without.bytes} bytes without data, ${perRenewal} bytes with ${LIMITS.dataMaxBytes} bytes of data`,
    );
    for (const name of names) expect((await raw(name)).data).toBe(`s${big}`);
    expect(await store.releaseMany(leases)).toEqual(names.map(() => true));
    for (const name of names) expect(await store.get(name)).toMatchObject({ owner: '', data: big });
    // The read path (a handle that knows no write of the grant) carries the value it read.
    const again = (await other.tryAcquire('quiet/0', 'b', 60_000))!;
    expect(await store.renew({ ...again, data: 'forged' })).not.toBeNull();
    expect((await store.get('quiet/0'))?.data).toBe(big);
  });

  it("a paused ex-holder's late write after a takeover is refused by the conditional write", async () => {
    const old = (await store.tryAcquire('paused', 'a', shortTtl))!;
    await store.writeData(old, 'a1');
    await sleep(shortTtl + 60);
    const taker = (await other.tryAcquire('paused', 'b', 60_000))!;
    expect(taker.data).toBe('a1');
    // The ex-holder's store still knows its last revision: the write is refused, then a read
    // shows the record is no longer this grant's.
    const late = await sent(() => store.writeData(old, 'a2, late'));
    expect([late.result, late.msgs]).toEqual([false, 2]);
    expect(await store.renew(old, undefined, 'a3, late')).toBeNull();
    expect(await store.release(old, 'a4, late')).toBe(false);
    expect(await store.get('paused')).toMatchObject({ owner: 'b', token: taker.token, data: 'a1' });
  });

  it('values written before lease data existed read with none and take data from then on', async () => {
    // A bucket of the previous release: the same layout, values without a `data` member.
    const oldBucket = 'before_data';
    const nc = await connect({ servers: `127.0.0.1:${server.port}` });
    const now = Date.now();
    try {
      const kv = await new Kvm(jetstream(nc)).create(oldBucket, { history: 1 });
      const put = (resource: string, value: object) =>
        kv.put(keyOf(resource), JSON.stringify(value));
      await put('old/held', { owner: 'a', token: 4, expiresAt: now + 60_000, nonce: 'n4' });
      await put('old/released', { owner: '', token: 9, expiresAt: 0, nonce: '' });
      await put('old/expired', { owner: 'z', token: 2, expiresAt: now - 10_000, nonce: 'n2' });
      await put('old/bad', { owner: '', token: 1, expiresAt: 0, nonce: '', data: 42 });
    } finally {
      await nc.close();
    }
    const upgraded = await NatsStore.open(`${server.url}?bucket=${oldBucket}&maxClockSkewMs=0`);
    try {
      const held = (await upgraded.get('old/held'))!;
      expect(held).toEqual({ resource: 'old/held', owner: 'a', token: 4, expiresAt: now + 60_000 });
      expect((await upgraded.list({ prefix: 'old/e' })).map((r) => 'data' in r)).toEqual([false]);
      // The holder from before the upgrade renews, writes and releases with data.
      const lease: Lease = { ...held, ttlMs: 60_000 };
      expect(await messages(() => upgraded.renew(lease))).toBe(2); // a read, then a write
      expect(await upgraded.writeData(lease, 'first value')).toBe(true);
      expect((await upgraded.renew(lease, undefined, 'second value'))?.data).toBe('second value');
      expect(await upgraded.release(lease, 'third value')).toBe(true);
      expect((await upgraded.tryAcquire('old/held', 'b', 60_000))?.data).toBe('third value');
      // Released and expired old values are granted with no data, their tokens continued.
      const released = (await upgraded.tryAcquire('old/released', 'b', 60_000))!;
      expect([released.token, 'data' in released]).toEqual([10, false]);
      const expired = (await upgraded.tryAcquire('old/expired', 'b', 60_000))!;
      expect([expired.token, 'data' in expired]).toEqual([3, false]);
      expect(await upgraded.writeData(expired, new Uint8Array([1]))).toBe(true);
      expect((await upgraded.get('old/expired'))?.data).toEqual(new Uint8Array([1]));
      // A `data` member that is not leasehold's is a corrupt value, not an empty one.
      const bad = await rejection(upgraded.get('old/bad'));
      expect([bad.code, bad.retryable]).toEqual(['RECORD_INVALID', false]);
    } finally {
      await upgraded.close();
    }
  });
});
