import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseError, openStore, type Lease } from '../../src/index.js';
import { DynamodbStore, type DynamodbClient } from '../../src/stores/dynamodb/index.js';
import { mapDynamodbError } from '../../src/stores/dynamodb/dynamodb-errors.js';
import {
  dynaliteUnavailable,
  startDynalite,
  type DynaliteServer,
} from '../harness/dynalite-server.js';
import { describeServer } from '../harness/describe-server.js';

let server: DynaliteServer;
let raw: DynamoDBClient;
let tables = 0;
const freshTable = (): string => `ddb_${process.pid}_${++tables}`;

async function failure(promise: Promise<unknown>): Promise<LeaseError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LeaseError);
  return error as LeaseError;
}

/** A real client whose calls are counted and whose concurrency is measured. */
function countingClient(inner: DynamodbClient) {
  const counts = new Map<string, number>();
  const state = { inFlight: 0, maxInFlight: 0, counts };
  const client: DynamodbClient = {
    async send(command, options) {
      const name = command.constructor.name;
      counts.set(name, (counts.get(name) ?? 0) + 1);
      state.maxInFlight = Math.max(state.maxInFlight, ++state.inFlight);
      try {
        return await inner.send(command, options);
      } finally {
        state.inFlight--;
      }
    },
  };
  return { client, state };
}

/**
 * A real client around which `around` runs each command: it may send it (with `send`), more than
 * once, and look at or add to what comes back.
 */
function wrappedClient(
  inner: DynamodbClient,
  around: (command: { input?: Record<string, unknown> }, send: () => Promise<unknown>) => unknown,
): DynamodbClient {
  return {
    send: async (command, options) =>
      around(command as { input?: Record<string, unknown> }, () => inner.send(command, options)),
  };
}

const isUpdate = (command: object): boolean => command.constructor.name === 'UpdateItemCommand';
/** An acquire: the one update that asks for the new values back (the token and the data). */
const isAcquire = (command: { input?: Record<string, unknown> }): boolean =>
  isUpdate(command) && command.input?.ReturnValues === 'ALL_NEW';

/**
 * What DynamoDB does and dynalite does not: a failed condition of a request with
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` carries the item that failed it (read here
 * right after, consistently, with nothing else writing).
 */
async function withFailedItem(
  command: { input?: Record<string, unknown> },
  send: () => Promise<unknown>,
): Promise<unknown> {
  try {
    return await send();
  } catch (error) {
    const input = command.input ?? {};
    if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
    if (input.ReturnValuesOnConditionCheckFailure !== 'ALL_OLD') throw error;
    const { Item } = await raw.send(
      new GetItemCommand({
        TableName: input.TableName as string,
        Key: input.Key as never,
        ConsistentRead: true,
      }),
    );
    throw Object.assign(error as Error, { Item });
  }
}

describeServer('DynamoDB store', dynaliteUnavailable(), () => {
  beforeAll(async () => {
    server = await startDynalite();
    raw = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: server.endpoint,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
  });
  afterAll(async () => {
    raw?.destroy();
    await server?.stop();
  });

  describe('URL', () => {
    it('refuses malformed URLs with STORE_URL_INVALID, naming the problem', async () => {
      const cases: [string, string][] = [
        ['dynamodb:', 'no table'],
        ['dynamodb://', 'no table'],
        [server.url('ab'), 'table'],
        [`${server.url('tbl1')}&colour=blue`, 'colour'],
        [server.url('tbl1', { createTable: 'yes' }), 'createTable'],
        [server.url('tbl1', { maxClockSkewMs: 'soon' }), 'maxClockSkewMs'],
        [server.url('tbl1', { requestTimeoutMs: 10 }), 'requestTimeoutMs'],
        [server.url('tbl1', { endpoint: 'ftp://127.0.0.1:1' }), 'endpoint'],
      ];
      for (const [url, named] of cases) {
        const error = await failure(openStore(url));
        expect(error.code, url).toBe('STORE_URL_INVALID');
        expect(error.message).toContain(named);
      }
    });

    it('never echoes credentials put into the endpoint', async () => {
      const url = server.url('tbl1', { endpoint: 'http://user:s3cret@127.0.0.1:1' });
      const error = await failure(openStore(url));
      expect(error.code).toBe('STORE_URL_INVALID');
      expect(error.message).toContain('endpoint');
      expect(error.message).not.toContain('s3cret');
    });
  });

  describe('table', () => {
    it('a missing table fails, not retryable, saying how to create it', async () => {
      const table = freshTable();
      const error = await failure(openStore(server.url(table)));
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain(`"${table}"`);
      expect(error.message).toContain('createTable=true');
      expect(error.message).toContain('AttributeName=resource');
    });

    it('createTable=true makes an on-demand table keyed by resource; later opens use it', async () => {
      const table = freshTable();
      const store = await openStore(server.url(table, { createTable: true }));
      const { Table } = await raw.send(new DescribeTableCommand({ TableName: table }));
      expect(Table?.TableStatus).toBe('ACTIVE');
      expect(Table?.KeySchema).toEqual([{ AttributeName: 'resource', KeyType: 'HASH' }]);
      expect(Table?.AttributeDefinitions).toEqual([
        { AttributeName: 'resource', AttributeType: 'S' },
      ]);
      expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
      const lease = await store.tryAcquire('job', 'a', 5000);
      const again = await openStore(server.url(table));
      expect(await again.get('job')).toMatchObject({ owner: 'a', token: lease!.token });
      await Promise.all([store.close(), again.close()]);
    });

    it('createTable() makes a missing table and leaves an existing one alone', async () => {
      const table = freshTable();
      await raw.send(
        new CreateTableCommand({
          TableName: table,
          AttributeDefinitions: [{ AttributeName: 'resource', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'resource', KeyType: 'HASH' }],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
      const store = await DynamodbStore.open(server.url(table));
      await store.tryAcquire('kept', 'a', 5000);
      await store.createTable();
      expect(await store.get('kept')).toMatchObject({ owner: 'a', token: 1 });
      await store.close();
    });

    it('refuses a table with another key schema', async () => {
      const table = freshTable();
      await raw.send(
        new CreateTableCommand({
          TableName: table,
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
      const error = await failure(openStore(server.url(table, { createTable: true })));
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain('key schema [id HASH]');
    });
  });

  describe('with a client of your own', () => {
    it('uses the SDK module it is given instead of loading one by name (for bundlers)', async () => {
      const sdk = await import('@aws-sdk/client-dynamodb');
      let made = 0;
      class CountedUpdate extends sdk.UpdateItemCommand {
        constructor(input: ConstructorParameters<typeof sdk.UpdateItemCommand>[0]) {
          super(input);
          made++;
        }
      }
      const store = await DynamodbStore.open(raw, {
        table: freshTable(),
        createTable: true,
        sdk: { ...sdk, UpdateItemCommand: CountedUpdate },
      });
      const lease = (await store.tryAcquire('job', 'a', 5000))!;
      expect(await store.release(lease)).toBe(true);
      expect(made).toBe(2);
      await store.close();
      await expect(
        DynamodbStore.open(raw, {
          table: freshTable(),
          sdk: { DynamoDBClient: sdk.DynamoDBClient },
        }),
      ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: /sdk .*UpdateItemCommand/ });
    });

    it('uses it, one request per operation, and leaves it open on close', async () => {
      const table = freshTable();
      const { client, state } = countingClient(raw);
      const store = await DynamodbStore.open(client, { table, createTable: true });
      state.counts.clear();

      const lease = (await store.tryAcquire('job', 'a', 5000))!;
      const renewed = await store.renew(lease);
      const record = await store.get('job');
      expect(await store.release(lease)).toBe(true);
      expect(Object.fromEntries(state.counts)).toEqual({
        UpdateItemCommand: 3,
        GetItemCommand: 1,
      });
      expect(record).toEqual({
        resource: 'job',
        owner: 'a',
        token: 1,
        expiresAt: renewed!.expiresAt,
      });

      await store.close();
      const item = await raw.send(
        new GetItemCommand({ TableName: table, Key: { resource: { S: 'job' } } }),
      );
      expect(item.Item).toEqual({
        resource: { S: 'job' },
        owner: { S: '' },
        token: { N: '1' },
        expiresAt: { N: '0' },
      });
    });

    it('accepts the real DynamoDBClient type and refuses connection options', async () => {
      const client: DynamodbClient = raw; // compiles: the structural type fits the SDK's client
      const error = await failure(
        DynamodbStore.open(client, { table: freshTable(), region: 'eu-west-1' }),
      );
      expect(error.code).toBe('INVALID_ARGUMENT');
      expect(error.message).toContain('region');
    });

    it('renewMany and releaseMany keep at most `concurrency` updates in flight, answers in order', async () => {
      const table = freshTable();
      const { client, state } = countingClient(raw);
      const store = await DynamodbStore.open(client, { table, createTable: true, concurrency: 4 });
      const leases: Lease[] = [];
      for (let i = 0; i < 20; i++) leases.push((await store.tryAcquire(`c${i}`, 'a', 5000))!);
      state.maxInFlight = 0;
      const renewed = await store.renewMany([...leases, leases[0]!]);
      expect(renewed.map((r) => r?.resource)).toEqual(
        [...leases, leases[0]!].map((l) => l.resource),
      );
      expect(state.maxInFlight).toBe(4);
      // The same lease twice: the first release wins, the second (sent after it) finds it gone.
      const released = await store.releaseMany([leases[1]!, leases[2]!, leases[1]!]);
      expect(released).toEqual([true, true, false]);
      await store.close();
    });
  });

  describe('acquireMany', () => {
    it('sends one UpdateItem per resource, at most `concurrency` in flight, answers in order', async () => {
      const table = freshTable();
      const { client, state } = countingClient(raw);
      const store = await DynamodbStore.open(client, { table, createTable: true, concurrency: 8 });
      await store.tryAcquire('m017', 'b', 60_000);
      state.counts.clear();
      state.maxInFlight = 0;
      const names = Array.from({ length: 200 }, (_, i) => `m${String(i).padStart(3, '0')}`);
      const outcomes = await store.acquireMany(names, 'a', 5000);
      expect(Object.fromEntries(state.counts)).toEqual({ UpdateItemCommand: 200 });
      expect(state.maxInFlight).toBe(8);
      expect(outcomes.map((o) => o.resource)).toEqual(names);
      expect(outcomes.filter((o) => o.lease?.token === 1)).toHaveLength(199);
      // dynalite ignores ReturnValuesOnConditionCheckFailure: a refusal without its holder.
      expect(outcomes[17]).toEqual({ resource: 'm017', lease: null });
      await store.close();
    });

    it('reports the holder where the endpoint returns the item that failed the condition', async () => {
      const table = freshTable();
      const client = wrappedClient(raw, withFailedItem);
      const store = await DynamodbStore.open(client, { table, createTable: true });
      const theirs = (await store.tryAcquire('h/1', 'b', 60_000))!;
      const outcomes = await store.acquireMany(['h/0', 'h/1'], 'a', 5000);
      expect(outcomes[0]!.lease).toMatchObject({ owner: 'a', token: 1 });
      expect(outcomes[0]!.holder).toBeUndefined();
      expect(outcomes[1]).toEqual({
        resource: 'h/1',
        lease: null,
        holder: { resource: 'h/1', owner: 'b', token: 1, expiresAt: theirs.expiresAt },
      });
      expect(await store.tryAcquire('h/1', 'a', 5000)).toBeNull();
      await store.close();
    });

    it.each([
      ['reads the record back', false, 1],
      ['takes the item from the failed condition', true, 0],
    ])(
      'recognises updates whose answer was lost and that the SDK sent again: %s',
      async (_, itemOnFailure, getsPerResource) => {
        const table = freshTable();
        const gets = { n: 0 };
        // The first attempt lands but its answer is lost; the retry fails its condition.
        const client = wrappedClient(raw, async (command, send) => {
          if (command.constructor.name === 'GetItemCommand') gets.n++;
          if (!isAcquire(command)) return send();
          await send();
          const again = itemOnFailure ? withFailedItem(command, send) : send();
          return again.catch((error: unknown) => {
            throw Object.assign(error as Error, { $metadata: { attempts: 2 } });
          });
        });
        const store = await DynamodbStore.open(client, { table, createTable: true });
        await store.tryAcquire('l/2', 'b', 60_000); // sent twice: its retry finds b's own write
        gets.n = 0;
        const outcomes = await store.acquireMany(['l/0', 'l/1', 'l/2'], 'a', 5000);
        expect(outcomes.map((o) => o.lease?.token ?? null)).toEqual([1, 1, null]);
        expect(outcomes.map((o) => o.lease?.owner ?? null)).toEqual(['a', 'a', null]);
        // l/2 fails its condition at the first attempt, which is not retried: no read for it.
        expect(gets.n).toBe(2 * getsPerResource);
        await store.close();
      },
    );
  });

  describe('list', () => {
    it('pages after a resource in code-point order, reading the whole table for each page', async () => {
      const table = freshTable();
      const scans: { Count?: number; ScannedCount?: number }[] = [];
      const client = wrappedClient(raw, async (command, send) => {
        const answer = await send();
        if (command.constructor.name === 'ScanCommand') scans.push(answer as never);
        return answer;
      });
      const store = await DynamodbStore.open(client, { table, createTable: true });
      const before = Array.from({ length: 300 }, (_, i) => `a/${String(i).padStart(3, '0')}`);
      const names = ['b', '\u{10000}', '\ue000', '\uffff', 'b/x', 'ba'];
      await store.acquireMany([...before, ...names], 'a', 60_000);
      const all = (await store.list({ after: 'a/299' })).map((r) => r.resource);
      expect(all).toEqual(['b', 'b/x', 'ba', '\ue000', '\uffff', '\u{10000}']);
      // dynalite orders strings by UTF-16 units, where U+10000 sorts before U+FFFF: the server
      // filter must not drop what sorts after in code-point order.
      expect((await store.list({ after: '\uffff' })).map((r) => r.resource)).toEqual(['\u{10000}']);
      expect((await store.list({ prefix: 'b', after: 'b/x', limit: 1 }))[0]!.resource).toBe('ba');
      expect(await store.list({ prefix: 'b', after: 'c' })).toEqual([]);

      scans.length = 0;
      const page = await store.list({ prefix: 'a/', after: 'a/297' });
      expect(page.map((r) => r.resource)).toEqual(['a/298', 'a/299']);
      const sum = (key: 'Count' | 'ScannedCount') => scans.reduce((n, s) => n + (s[key] ?? 0), 0);
      expect(sum('ScannedCount')).toBe(306); // every item is read (and charged) ...
      expect(sum('Count')).toBe(3); // ... and only those from `after` on come back
      await store.close();
    });
  });

  describe('clock skew', () => {
    it('a contender within maxClockSkewMs past expiry is refused; beyond it, it takes over', async () => {
      const table = freshTable();
      const t0 = 1_800_000_000_000;
      const holderClock = { now: () => t0 };
      const contenderClock = { now: () => t0 };
      const holder = await DynamodbStore.open(server.url(table, { createTable: true }), {
        clock: holderClock,
        maxClockSkewMs: 1000,
      });
      const contender = await DynamodbStore.open(server.url(table), {
        clock: contenderClock,
        maxClockSkewMs: 1000,
      });
      expect(holder.maxClockSkewMs).toBe(1000);
      const lease = await holder.tryAcquire('job', 'holder', 2000);
      expect(lease).toMatchObject({ token: 1, expiresAt: t0 + 2000 });

      contenderClock.now = () => t0 + 2000 + 1000; // its clock says expired, but within the skew
      expect(await contender.tryAcquire('job', 'contender', 2000)).toBeNull();
      contenderClock.now = () => t0 + 2000 + 1001;
      const taken = await contender.tryAcquire('job', 'contender', 2000);
      expect(taken).toMatchObject({ owner: 'contender', token: 2, expiresAt: t0 + 5001 });
      expect(await holder.renew(lease!)).toBeNull();
      await Promise.all([holder.close(), contender.close()]);
    });
  });

  it('a renewal that lands after a newer one never moves expiresAt backwards, and still succeeds', async () => {
    const table = freshTable();
    const t0 = 1_800_000_000_000;
    const clock = { now: () => t0 };
    const store = await DynamodbStore.open(server.url(table, { createTable: true }), {
      clock,
      maxClockSkewMs: 100,
    });
    const lease = (await store.tryAcquire('job', 'holder', 2000))!;
    clock.now = () => t0 + 1500; // the newer renewal, computed later, lands first
    expect(await store.renew(lease)).toMatchObject({ expiresAt: t0 + 3500 });
    clock.now = () => t0 + 500; // the older one, computed earlier, delayed in flight
    expect(await store.renew(lease)).toMatchObject({
      owner: 'holder',
      token: 1,
      expiresAt: t0 + 3500,
    });
    expect((await store.get('job'))!.expiresAt).toBe(t0 + 3500);
    // Not ours any more: still a plain "no".
    expect(await store.renew({ ...lease, token: 2 })).toBeNull();
    await store.close();
  });

  describe('error mapping', () => {
    const map = (error: object) => mapDynamodbError(error, 'renew', 'tbl', '');
    const sdkError = (name: string, status: number, fault: 'client' | 'server') =>
      Object.assign(new Error(`${name} happened`), {
        name,
        $fault: fault,
        $metadata: { httpStatusCode: status },
      });

    it('throttling, server faults, timeouts and network errors are retryable', () => {
      for (const error of [
        sdkError('ProvisionedThroughputExceededException', 400, 'client'),
        sdkError('ThrottlingException', 400, 'client'),
        sdkError('RequestLimitExceeded', 400, 'client'),
        sdkError('InternalServerError', 500, 'server'),
        sdkError('ServiceUnavailable', 503, 'server'),
        Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
        Object.assign(new Error('timed out'), { name: 'TimeoutError' }),
      ]) {
        const mapped = map(error);
        expect(mapped.code).toBe('STORE_UNAVAILABLE');
        expect(mapped.retryable, error.message).toBe(true);
      }
    });

    it('validation, permissions, credentials and a missing table are not', () => {
      for (const [error, says] of [
        [sdkError('ValidationException', 400, 'client'), 'refused'],
        [sdkError('AccessDeniedException', 400, 'client'), 'dynamodb:DescribeTable'],
        [sdkError('UnrecognizedClientException', 400, 'client'), 'access key'],
        [sdkError('ResourceNotFoundException', 400, 'client'), 'createTable=true'],
        [
          Object.assign(new Error('Could not load credentials'), {
            name: 'CredentialsProviderError',
          }),
          'AWS_PROFILE',
        ],
        [new Error('Region is missing'), '?region='],
      ] as const) {
        const mapped = map(error);
        expect(mapped.code).toBe('STORE_UNAVAILABLE');
        expect(mapped.retryable, error.message).toBe(false);
        expect(mapped.message).toContain(says);
        expect(mapped.cause).toBe(error);
      }
    });
  });
});
