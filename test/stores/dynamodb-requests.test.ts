import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, type LeaseStore } from '../../src/index.js';
import {
  dynaliteUnavailable,
  startDynalite,
  type DynaliteServer,
} from '../harness/dynalite-server.js';
import { describeServer } from '../harness/describe-server.js';
import { awsRelay, type AwsRelay } from '../harness/aws-relay.js';

describeServer('DynamoDB store requests', dynaliteUnavailable(), () => {
  let server: DynaliteServer;
  let relay: AwsRelay;
  let store: LeaseStore;
  const table = `ddbr_${process.pid}`;

  /** The requests `work` made reach the server, by operation. */
  const requestsOf = async (work: () => Promise<unknown>): Promise<Record<string, number>> => {
    relay.clear();
    await work();
    return Object.fromEntries(relay.counts);
  };

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

  it('tryAcquire, renew and release are one UpdateItem each, granted or refused (a refused renew reads once)', async () => {
    let lease: Awaited<ReturnType<LeaseStore['tryAcquire']>> = null;
    const one = { UpdateItem: 1 };
    expect(
      await requestsOf(async () => {
        lease = await store.tryAcquire('job', 'a', 5000);
      }),
    ).toEqual(one);
    expect(lease).toMatchObject({ owner: 'a', token: 1 });
    expect(await requestsOf(() => store.tryAcquire('job', 'b', 5000))).toEqual(one);
    expect(await requestsOf(() => store.renew(lease!))).toEqual(one);
    // A refused renew reads the item once, to tell "not ours" from "a newer renewal of ours
    // landed first" (then it is a success that leaves the later expiry be).
    expect(await requestsOf(() => store.renew({ ...lease!, token: 7 }))).toEqual({
      UpdateItem: 1,
      GetItem: 1,
    });
    expect(await requestsOf(() => store.release({ ...lease!, owner: 'b' }))).toEqual(one);
    expect(await requestsOf(() => store.release(lease!))).toEqual(one);
    expect(await store.get('job')).toMatchObject({ owner: '', token: 1, expiresAt: 0 });
    expect(await requestsOf(() => store.tryAcquire('job', 'b', 5000))).toEqual(one);
    expect(await store.get('job')).toMatchObject({ owner: 'b', token: 2 });
  });

  it('an item holding only its key reads as released, and the next acquire takes it with token 1', async () => {
    const raw = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: server.endpoint,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    try {
      await raw.send(new PutItemCommand({ TableName: table, Item: { resource: { S: 'bare' } } }));
    } finally {
      raw.destroy();
    }
    expect(await store.get('bare')).toEqual({
      resource: 'bare',
      owner: '',
      token: 0,
      expiresAt: 0,
    });
    expect(await requestsOf(() => store.tryAcquire('bare', 'a', 5000))).toEqual({
      UpdateItem: 1,
    });
    expect(await store.get('bare')).toMatchObject({ owner: 'a', token: 1 });
    expect(await store.tryAcquire('bare', 'b', 5000)).toBeNull();
  });
});
