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
