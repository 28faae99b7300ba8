import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LIMITS, openStore, type Lease, type LeaseStore } from '../../src/index.js';
import { describeServer } from '../harness/describe-server.js';
import {
  dynaliteUnavailable,
  startDynalite,
  type DynaliteServer,
} from '../harness/dynalite-server.js';
import { awsRelay, type AwsRelay } from '../harness/aws-relay.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** A string of exactly `n` UTF-8 bytes, mostly 3-byte characters. */
const utf8Of = (n: number): string => '€'.repeat(Math.floor(n / 3)) + 'x'.repeat(n % 3);

/** Lease data on DynamoDB: one `data` attribute, written by the transitions' own updates. */
describeServer('DynamoDB lease data', dynaliteUnavailable(), () => {
  let server: DynaliteServer;
  let relay: AwsRelay;
  let store: LeaseStore;
  const table = `ddbd_${process.pid}`;
  const shortTtl = 150;

  /** The requests `work` made reach the server, by operation, and what `work` answered. */
  const counted = async <T>(work: () => Promise<T>): Promise<[T, Record<string, number>]> => {
    relay.clear();
    const result = await work();
    return [result, Object.fromEntries(relay.counts)];
  };
  const one = { UpdateItem: 1 };

  beforeAll(async () => {
    server = await startDynalite();
    relay = await awsRelay(server);
    store = await openStore(
      server.url(table, { endpoint: relay.endpoint, createTable: true, maxClockSkewMs: 0 }),
    );
  });
  afterAll(async () => {
    await store?.close();
    await relay?.close();
    await server?.stop();
  });

  it('declares lease data', () => {
    expect(store.capabilities.data).toBe(true);
  });

  it('writeData, renew with data and release with data are one UpdateItem each', async () => {
    const lease = (await store.tryAcquire('rt', 'a', 60_000))!;
    expect(await counted(() => store.writeData(lease, 'w1'))).toEqual([true, one]);
    const [renewed, renewCount] = await counted(() => store.renew(lease, undefined, 'r1'));
    expect([renewed?.data, renewCount]).toEqual(['r1', one]);
    expect(await counted(() => store.writeData(lease, null))).toEqual([true, one]);
    expect((await store.get('rt'))?.data).toBeUndefined();
    expect(await counted(() => store.release(lease, new Uint8Array([7, 8])))).toEqual([true, one]);
    expect(await store.get('rt')).toMatchObject({ owner: '', token: lease.token, expiresAt: 0 });
    expect((await store.get('rt'))?.data).toEqual(new Uint8Array([7, 8]));
    // Refused writes are one request too, and write nothing.
    expect(await counted(() => store.writeData(lease, 'late'))).toEqual([false, one]);
    expect(await counted(() => store.release(lease, 'late'))).toEqual([false, one]);
    expect((await store.get('rt'))?.data).toEqual(new Uint8Array([7, 8]));
  });

  it('a renew with data that finds a later expiry of its own lease keeps that expiry and still writes the data', async () => {
    const lease = (await store.tryAcquire('forward', 'a', 1000))!;
    const longer = (await store.renew(lease, 60_000))!;
    // This renewal would move the expiry back: its update is refused, the lease is still ours,
    // so the data is written under the same owner and token (one more UpdateItem; dynalite
    // returns no failed item, hence the GetItem).
    const [renewed, requests] = await counted(() => store.renew(lease, 1000, 'still mine'));
    expect(renewed).toMatchObject({ expiresAt: longer.expiresAt, data: 'still mine' });
    expect(requests).toEqual({ UpdateItem: 2, GetItem: 1 });
    expect(await store.get('forward')).toMatchObject({
      expiresAt: longer.expiresAt,
      data: 'still mine',
    });
  });

  it('a grant after a release and after an expiry returns the data in its one UpdateItem', async () => {
    const first = (await store.tryAcquire('grant', 'a', 60_000))!;
    await store.release(first, 'left by a');
    const [second, afterRelease] = await counted(() => store.tryAcquire('grant', 'b', shortTtl));
    expect([second?.data, afterRelease]).toEqual(['left by a', one]);
    await store.writeData(second!, 'left by b');
    await sleep(shortTtl + 60);
    const [third, afterExpiry] = await counted(() => store.tryAcquire('grant', 'c', 60_000));
    expect([third?.token, third?.data, afterExpiry]).toEqual([second!.token + 1, 'left by b', one]);
    await store.release(third!);
    const [many, manyCount] = await counted(() => store.acquireMany(['grant'], 'd', 60_000));
    expect([many[0]!.lease?.data, manyCount]).toEqual(['left by b', one]);
  });

  it('renew, renewMany and releaseMany without data neither send nor touch the data attribute', async () => {
    const leases: Lease[] = [];
    for (const name of ['quiet/1', 'quiet/2', 'quiet/3']) {
      const lease = (await store.tryAcquire(name, 'a', 60_000))!;
      await store.writeData(lease, utf8Of(LIMITS.dataMaxBytes));
      leases.push(lease);
    }
    relay.clear();
    expect(await store.renew(leases[0]!)).not.toBeNull();
    expect((await store.renewMany(leases, 30_000)).every((l) => l !== null)).toBe(true);
    expect(await store.releaseMany(leases)).toEqual([true, true, true]);
    const updates = relay.requests.filter((r) => r.operation === 'UpdateItem');
    expect(updates).toHaveLength(7);
    for (const { body } of updates) {
      expect(body).not.toMatch(/#d|:data|"data"/);
      // The request is as small as one without data: no 4 KiB value rides along.
      expect(body.length).toBeLessThan(600);
    }
    for (const lease of leases)
      expect((await store.get(lease.resource))?.data).toBe(utf8Of(LIMITS.dataMaxBytes));
  });

  it("a paused ex-holder's late write after a takeover is refused by the condition", async () => {
    const old = (await store.tryAcquire('paused', 'a', shortTtl))!;
    await store.writeData(old, 'a1');
    await sleep(shortTtl + 60);
    const taker = (await store.tryAcquire('paused', 'b', 60_000))!;
    expect(taker.data).toBe('a1');
    const [late, lateCount] = await counted(() => store.writeData(old, 'a2, late'));
    expect([late, lateCount]).toEqual([false, one]);
    expect(await store.renew(old, undefined, 'a3, late')).toBeNull();
    expect(await store.release(old, 'a4, late')).toBe(false);
    expect(await store.get('paused')).toMatchObject({ owner: 'b', token: taker.token, data: 'a1' });
  });

  it('items written before lease data existed read with none and take data from then on', async () => {
    // The items the previous release wrote: the same table, no `data` attribute.
    const raw = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: server.endpoint,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    const now = Date.now();
    const old = (resource: string, owner: string, token: number, expiresAt: number) =>
      raw.send(
        new PutItemCommand({
          TableName: table,
          Item: {
            resource: { S: resource },
            owner: { S: owner },
            token: { N: String(token) },
            expiresAt: { N: String(expiresAt) },
          },
        }),
      );
    try {
      await old('old/held', 'a', 4, now + 60_000);
      await old('old/released', '', 9, 0);
      await old('old/expired', 'z', 2, now - 10_000);
    } finally {
      raw.destroy();
    }
    // A fresh store on that table, as after an upgrade.
    const upgraded = await openStore(server.url(table, { maxClockSkewMs: 0 }));
    try {
      const held = (await upgraded.get('old/held'))!;
      expect(held).toEqual({ resource: 'old/held', owner: 'a', token: 4, expiresAt: now + 60_000 });
      expect('data' in held).toBe(false);
      expect((await upgraded.list({ prefix: 'old/' })).map((r) => 'data' in r)).toEqual([
        false,
        false,
        false,
      ]);
      // The holder from before the upgrade renews, writes and releases with data.
      const lease: Lease = { ...held, ttlMs: 60_000 };
      expect(await upgraded.renew(lease)).toMatchObject({ token: 4 });
      expect(await upgraded.writeData(lease, 'first value')).toBe(true);
      expect((await upgraded.renew(lease, undefined, 'second value'))?.data).toBe('second value');
      expect(await upgraded.release(lease, 'third value')).toBe(true);
      expect((await upgraded.tryAcquire('old/held', 'b', 60_000))?.data).toBe('third value');
      // Released and expired old items are granted with no data, their tokens continued.
      const released = (await upgraded.tryAcquire('old/released', 'b', 60_000))!;
      expect([released.token, 'data' in released]).toEqual([10, false]);
      const expired = (await upgraded.tryAcquire('old/expired', 'b', 60_000))!;
      expect([expired.token, 'data' in expired]).toEqual([3, false]);
      expect(await upgraded.writeData(expired, new Uint8Array([1]))).toBe(true);
      expect((await upgraded.get('old/expired'))?.data).toEqual(new Uint8Array([1]));
    } finally {
      await upgraded.close();
    }
  });
});
