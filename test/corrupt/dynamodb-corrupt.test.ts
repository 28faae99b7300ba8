import {
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ErrorCode, openStore, type Lease, type LeaseStore } from '../../src/index.js';
import { awsRelay, type AwsRelay } from '../harness/aws-relay.js';
import { describeServer } from '../harness/describe-server.js';
import {
  dynaliteUnavailable,
  startDynalite,
  type DynaliteServer,
} from '../harness/dynalite-server.js';
import { rejection } from '../harness/expect-error.js';

type Item = Record<string, AttributeValue>;

/**
 * Items written by hand, each a released or lapsed record but for one thing wrong. Valid, each
 * would be free to take; corrupt, each must be refused and left as it is.
 */
const CORRUPT: Readonly<Record<string, Item>> = {
  'no-token': { owner: { S: '' }, expiresAt: { N: '0' } },
  'no-owner': { token: { N: '5' }, expiresAt: { N: '0' } },
  'no-expires': { owner: { S: '' }, token: { N: '5' } },
  'token-s': { owner: { S: '' }, token: { S: '5' }, expiresAt: { N: '0' } },
  'expires-s': { owner: { S: '' }, token: { N: '5' }, expiresAt: { S: 'soon' } },
  'owner-n': { owner: { N: '7' }, token: { N: '5' }, expiresAt: { N: '0' } },
  'token-huge': { owner: { S: '' }, token: { N: '9007199254740993' }, expiresAt: { N: '0' } },
  'token-negative': { owner: { S: '' }, token: { N: '-3' }, expiresAt: { N: '0' } },
  'token-zero': { owner: { S: '' }, token: { N: '0' }, expiresAt: { N: '0' } },
  'expires-negative': { owner: { S: 'x' }, token: { N: '5' }, expiresAt: { N: '-1' } },
  'owner-huge': { owner: { S: 'o'.repeat(1000) }, token: { N: '5' }, expiresAt: { N: '1' } },
};
const NAMES = Object.keys(CORRUPT);

/** Other items written by hand, returned with a refusal too. */
const OTHERS: Record<string, Item> = {
  'token-max': { owner: { S: '' }, token: { N: '9007199254740991' }, expiresAt: { N: '0' } },
};

describeServer('DynamoDB store: corrupt records', dynaliteUnavailable(), () => {
  let server: DynaliteServer;
  let relay: AwsRelay;
  let raw: DynamoDBClient;
  /** Straight to dynalite, which returns no item with a failed condition. */
  let store: LeaseStore;
  /** Through a relay that returns the item with a failed condition, as DynamoDB does (`ALL_OLD`). */
  let allOld: LeaseStore;
  const table = `ddbc_${process.pid}`;

  const put = (resource: string, item: Item) =>
    raw.send(
      new PutItemCommand({ TableName: table, Item: { resource: { S: resource }, ...item } }),
    );
  const read = async (resource: string): Promise<Item | undefined> =>
    (await raw.send(new GetItemCommand({ TableName: table, Key: { resource: { S: resource } } })))
      .Item;
  const unchanged = async (resource: string) =>
    expect(await read(resource)).toEqual({ resource: { S: resource }, ...CORRUPT[resource] });
  const invalid = async (call: Promise<unknown>) =>
    expect((await rejection(call)).code).toBe(ErrorCode.RECORD_INVALID);

  beforeAll(async () => {
    server = await startDynalite();
    relay = await awsRelay(server);
    store = await openStore(server.url(table, { createTable: true, maxClockSkewMs: 0 }));
    allOld = await openStore(server.url(table, { endpoint: relay.endpoint, maxClockSkewMs: 0 }));
    raw = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: server.endpoint,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    // A refused update answers with the item it found, as DynamoDB does and dynalite does not.
    relay.rewrite = (_request, status, body) => {
      if (status !== 400 || !body.includes('ConditionalCheckFailed')) return undefined;
      const sent = JSON.parse(relay.requests.at(-1)!.body) as { Key: Item };
      const found = CORRUPT[sent.Key.resource!.S!] ?? OTHERS[sent.Key.resource!.S!];
      if (!found) return undefined;
      return JSON.stringify({ ...JSON.parse(body), Item: { ...sent.Key, ...found } });
    };
    for (const name of NAMES) await put(name, CORRUPT[name]!);
  });
  afterAll(async () => {
    await store?.close();
    await allOld?.close();
    raw?.destroy();
    await relay?.close();
    await server?.stop();
  });

  it('get answers RECORD_INVALID for each corrupt form, and list fails as a whole', async () => {
    for (const name of NAMES) await invalid(store.get(name));
    await invalid(store.list());
    await invalid(store.list({ prefix: 'token-' }));
  });

  it('tryAcquire is refused by the condition: nothing overwritten, RECORD_INVALID where the endpoint returns the item', async () => {
    for (const name of NAMES) {
      // dynalite returns no item with a refusal: the store can only say "not granted".
      expect(await store.tryAcquire(name, 'thief', 5000)).toBeNull();
      await unchanged(name);
      await invalid(allOld.tryAcquire(name, 'thief', 5000));
      await unchanged(name);
    }
  });

  it('batch acquires: a healthy resource beside a corrupt one is granted, the corrupt one never', async () => {
    await store.release((await store.tryAcquire('healthy', 'a', 5000))!);
    const outcomes = await store.acquireMany(['healthy', ...NAMES], 'b', 5000);
    expect(outcomes[0]!.lease).toMatchObject({ owner: 'b' });
    for (const outcome of outcomes.slice(1)) expect(outcome.lease).toBeNull();
    await store.release(outcomes[0]!.lease!);
    // With the item returned on refusal, the batch fails as a whole with RECORD_INVALID.
    await invalid(allOld.acquireMany(['healthy', 'token-s'], 'c', 5000));
    await store.release((await store.get('healthy').then(held))!);
    expect(await store.acquireAll(['healthy', 'no-token'], 'd', 5000)).toBeNull();
    expect(await store.get('healthy')).toMatchObject({ owner: '' });
    // acquireFirst looks at the other candidates with one list: it fails as a whole when that
    // list meets a corrupt record, and takes the healthy one when it does not.
    await invalid(store.acquireFirst(['token-negative', 'no-token', 'healthy'], 'e', 5000));
    const first = await store.acquireFirst(['token-negative', 'healthy'], 'e', 5000);
    expect(first).toMatchObject({ resource: 'healthy', owner: 'e' });
    await store.release(first!);
    await invalid(allOld.acquireFirst(['token-huge', 'healthy'], 'f', 5000));
    await invalid(allOld.acquireAll(['healthy', 'owner-n'], 'g', 5000));
    for (const name of NAMES) await unchanged(name);
  });

  it('a lease whose record became corrupt is neither renewed nor released', async () => {
    const leases: Lease[] = [];
    for (const resource of ['gone-1', 'gone-2', 'kept']) {
      leases.push((await store.tryAcquire(resource, 'h', 60_000))!);
    }
    const [one, two, kept] = leases as [Lease, Lease, Lease];
    // Owner and token as the holder knows them, one other attribute broken.
    const broken: Item = {
      owner: { S: 'h' },
      token: { N: String(one.token) },
      expiresAt: { S: 'x' },
    };
    await put('gone-1', broken);
    await put('gone-2', { ...broken, expiresAt: { N: '-5' }, token: { N: String(two.token) } });
    const before = [await read('gone-1'), await read('gone-2')];
    for (const lease of [one, two]) {
      await expect(store.renew(lease).catch(codeOf)).resolves.toSatisfy(notOurs);
      await expect(store.release(lease).catch(codeOf)).resolves.toSatisfy(notOurs);
    }
    const renewed = await store.renewMany([one, kept, two]).catch(codeOf);
    if (Array.isArray(renewed)) {
      expect(renewed[0]).toBeNull();
      expect(renewed[1]).toMatchObject({ resource: 'kept', token: kept.token });
      expect(renewed[2]).toBeNull();
    } else expect(renewed).toBe(ErrorCode.RECORD_INVALID);
    const released = await store.releaseMany([one, kept, two]).catch(codeOf);
    if (Array.isArray(released)) expect(released).toEqual([false, true, false]);
    else expect(released).toBe(ErrorCode.RECORD_INVALID);
    expect([await read('gone-1'), await read('gone-2')]).toEqual(before);
    await invalid(store.get('gone-1'));
  });

  it('a token at 2^53 − 1 is valid to read, but no token is left above it', async () => {
    await put('token-max', OTHERS['token-max']!);
    expect(await store.get('token-max')).toMatchObject({ token: Number.MAX_SAFE_INTEGER });
    expect(await store.tryAcquire('token-max', 'i', 5000)).toBeNull();
    await invalid(allOld.tryAcquire('token-max', 'i', 5000));
    expect(await read('token-max')).toMatchObject({ token: { N: '9007199254740991' } });
  });

  it('a fractional token, which no condition can see, is refused after the update and never becomes a lease', async () => {
    await put('token-fraction', { owner: { S: '' }, token: { N: '2.5' }, expiresAt: { N: '0' } });
    await invalid(store.get('token-fraction'));
    await invalid(store.tryAcquire('token-fraction', 'j', 5000));
    // The update landed (3.5, owner j, who got no lease): still fractional, so it stays refused.
    expect(await read('token-fraction')).toMatchObject({ token: { N: '3.5' }, owner: { S: 'j' } });
    expect(await store.tryAcquire('token-fraction', 'k', 5000)).toBeNull();
    await invalid(store.get('token-fraction'));
    await raw.send(
      new DeleteItemCommand({ TableName: table, Key: { resource: { S: 'token-fraction' } } }),
    );
  });
});

function held(record: { owner: string; token: number; resource: string } | null): Lease | null {
  return record && { ...record, expiresAt: 0, ttlMs: 5000 };
}

function codeOf(error: unknown): string {
  return (error as { code?: string }).code ?? String(error);
}

function notOurs(answer: unknown): boolean {
  return answer === null || answer === false || answer === ErrorCode.RECORD_INVALID;
}
