import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseError, openStore, type LeaseStore } from '../../src/index.js';
import {
  amzDateOf,
  DynamodbWire,
  loadUndici,
  type WireTarget,
} from '../../src/stores/dynamodb/dynamodb-wire.js';
import {
  dynaliteUnavailable,
  startDynalite,
  type DynaliteServer,
} from '../harness/dynalite-server.js';
import { describeServer } from '../harness/describe-server.js';
import { dynamodbRelay, type DynamodbRelay } from '../harness/dynamodb-relay.js';

const bytes = (data: string | ArrayBuffer | ArrayBufferView): string | Uint8Array =>
  typeof data === 'string'
    ? data
    : ArrayBuffer.isView(data)
      ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      : new Uint8Array(data);

/** The SDK's signer wants a hash class; node's crypto behind its interface. */
class Sha256 {
  private readonly hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(bytes(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }
  reset(): void {}
}

/** The Authorization header the SDK's own signer (@smithy/signature-v4) gives the same request. */
async function sdkSignature(
  target: WireTarget,
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string },
  at: number,
  headers: Record<string, string>,
  body: string,
): Promise<string> {
  const signer = new SignatureV4({
    credentials,
    region: target.region,
    service: target.service,
    sha256: Sha256,
    applyChecksum: false,
  });
  const signed = await signer.sign(
    {
      method: 'POST',
      protocol: target.protocol,
      hostname: target.hostname,
      port: target.port,
      path: target.path,
      query: {},
      headers: { ...headers },
      body,
    },
    { signingDate: new Date(at) },
  );
  return String(signed.headers.authorization);
}

/** What the wire signs for a request: its headers before the Authorization is added. */
function wireHeaders(
  host: string,
  amzDate: string,
  operation: string,
  sessionToken?: string,
): [string, string][] {
  const headers: [string, string][] = [
    ['content-type', 'application/x-amz-json-1.0'],
    ['host', host],
    ['x-amz-date', amzDate],
  ];
  if (sessionToken) headers.push(['x-amz-security-token', sessionToken]);
  headers.push(['x-amz-target', `DynamoDB_20120810.${operation}`]);
  return headers;
}

const undici = await loadUndici();

describe('DynamodbWire signatures (Signature Version 4)', () => {
  const local: WireTarget = {
    protocol: 'http:',
    hostname: '127.0.0.1',
    port: 8000,
    path: '/',
    region: 'us-east-1',
    service: 'dynamodb',
  };
  const aws: WireTarget = {
    protocol: 'https:',
    hostname: 'dynamodb.eu-west-1.amazonaws.com',
    port: undefined,
    path: '/',
    region: 'eu-west-1',
    service: 'dynamodb',
  };
  const body = JSON.stringify({
    TableName: 'leases',
    Key: { resource: { S: 'jobs/ünïcode 1' } },
    UpdateExpression: 'SET #e = :e',
  });
  const options = {
    credentials: () => Promise.reject(new Error('not used')),
    maxSockets: 1,
    attemptTimeoutMs: 1000,
    maxAttempts: 3,
    connectTimeoutMs: 1000,
    undici,
  };

  it.each([
    ['a loopback endpoint with a port, long-term keys', local, 'localhost', undefined],
    ['an AWS endpoint, session credentials', aws, aws.hostname, 'IQoJb3JpZ2luX2VjE//token+/='],
  ])('matches the SDK signer for %s', async (_, target, _host, sessionToken) => {
    const wire = new DynamodbWire(target, options);
    const credentials = {
      accessKeyId: 'AKIDEXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
      sessionToken,
    };
    const host = target.port === undefined ? target.hostname : `${target.hostname}:${target.port}`;
    // Two days and a rotated secret: the cached signing key must follow both.
    const times = [Date.UTC(2026, 11, 3, 23, 59, 59), Date.UTC(2026, 11, 4, 0, 0, 1)];
    for (const secret of [credentials.secretAccessKey, 'rotated/SECRET+key']) {
      for (const at of times) {
        const amzDate = amzDateOf(at);
        const headers = wireHeaders(host, amzDate, 'UpdateItem', sessionToken);
        const mine = wire.sign({ ...credentials, secretAccessKey: secret }, amzDate, headers, body);
        const sdk = await sdkSignature(
          target,
          { ...credentials, secretAccessKey: secret },
          at,
          Object.fromEntries(headers.filter(([name]) => name !== 'x-amz-date')),
          body,
        );
        expect(mine).toBe(sdk);
      }
    }
    wire.destroy();
  });

  it('gives another signature for another body, operation or key', () => {
    const wire = new DynamodbWire(local, options);
    const credentials = { accessKeyId: 'AKID', secretAccessKey: 'secret' };
    const amzDate = amzDateOf(Date.UTC(2026, 0, 1));
    const headers = wireHeaders('127.0.0.1:8000', amzDate, 'UpdateItem');
    const base = wire.sign(credentials, amzDate, headers, body);
    expect(wire.sign(credentials, amzDate, headers, `${body} `)).not.toBe(base);
    expect(
      wire.sign(credentials, amzDate, wireHeaders('127.0.0.1:8000', amzDate, 'GetItem'), body),
    ).not.toBe(base);
    expect(
      wire.sign({ ...credentials, secretAccessKey: 'other' }, amzDate, headers, body),
    ).not.toBe(base);
    expect(base).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKID\/20260101\/us-east-1\/dynamodb\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=[0-9a-f]{64}$/,
    );
    wire.destroy();
  });
});

describeServer('DynamoDB store: the hot calls by the wire', dynaliteUnavailable(), () => {
  let server: DynaliteServer;
  let relay: DynamodbRelay;
  const stores: LeaseStore[] = [];
  let tables = 0;

  beforeAll(async () => {
    server = await startDynalite();
    relay = await dynamodbRelay(server);
  });
  afterAll(async () => {
    await Promise.allSettled(stores.map((s) => s.close()));
    await relay?.close();
    await server?.stop();
  });

  const open = async (extra: Record<string, unknown> = {}): Promise<LeaseStore> => {
    const table = `ddbw_${process.pid}_${++tables}`;
    relay.intercept = undefined;
    const store = await openStore(
      server.url(table, { endpoint: relay.endpoint, createTable: true, ...extra }),
    );
    stores.push(store);
    relay.clear();
    return store;
  };
  /** Sent by the SDK: it numbers every invocation; the wire sends no such header. */
  const bySdk = (headers: Record<string, unknown>): boolean => 'amz-sdk-invocation-id' in headers;
  const paths = (operation: string): string[] =>
    relay.requests
      .filter((r) => r.operation === operation)
      .map((r) => (bySdk(r.headers) ? 'sdk' : 'wire'));

  it('a store opened from a URL sends UpdateItem and GetItem by the wire, fastPath=false through the SDK', async () => {
    const fast = await open();
    const lease = (await fast.tryAcquire('job', 'a', 5000))!;
    expect(await fast.renew(lease)).toMatchObject({ owner: 'a', token: 1 });
    expect(await fast.get('job')).toMatchObject({ owner: 'a', token: 1 });
    expect(await fast.release(lease)).toBe(true);
    expect(paths('UpdateItem')).toEqual(['wire', 'wire', 'wire']);
    expect(paths('GetItem')).toEqual(['wire']);
    const signed = relay.requests[0]!.headers.authorization;
    expect(String(signed)).toMatch(
      /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/us-east-1\/dynamodb\//,
    );

    const slow = await open({ fastPath: false });
    const other = (await slow.tryAcquire('job', 'a', 5000))!;
    expect(await slow.release(other)).toBe(true);
    expect(paths('UpdateItem')).toEqual(['sdk', 'sdk']);
  });

  it('a throttled call is retried with backoff; one throttled to the end fails retryable, naming it', async () => {
    const store = await open();
    let refusals = 1;
    relay.intercept = ({ operation }) =>
      operation === 'UpdateItem' && refusals-- > 0
        ? {
            status: 400,
            body: {
              __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException',
              message: 'Rate of requests exceeds the allowed throughput.',
            },
          }
        : undefined;
    const lease = await store.tryAcquire('job', 'a', 5000);
    expect(lease).toMatchObject({ owner: 'a', token: 1 });
    expect(paths('UpdateItem')).toEqual(['wire', 'wire']);

    relay.clear();
    refusals = Infinity;
    const error = await store.renew(lease!).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LeaseError);
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: true });
    expect((error as Error).message).toMatch(
      /renew on table "ddbw_\d+_\d+".*ThrottlingException.*throttled/,
    );
    expect(paths('UpdateItem')).toEqual(['wire', 'wire', 'wire']); // maxAttempts
    relay.intercept = undefined;
    expect(await store.get('job')).toMatchObject({ owner: 'a', token: 1 }); // nothing lost
  });

  it('a server fault without a JSON body is retried, and its error says what came back', async () => {
    const store = await open();
    let faults = 5;
    relay.intercept = ({ operation }) =>
      operation === 'UpdateItem' && faults-- > 0
        ? { status: 503, body: { oops: 'not DynamoDB' } }
        : undefined;
    const error = await store.tryAcquire('job', 'a', 5000).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: true });
    expect(paths('UpdateItem')).toEqual(['wire', 'wire', 'wire']);
    relay.intercept = undefined;
    expect(await store.tryAcquire('job', 'b', 5000)).toMatchObject({ owner: 'b' });
  });

  it('a table that is gone is a clear, permanent error from the wire too', async () => {
    const store = await open();
    relay.intercept = () => ({
      status: 400,
      body: {
        __type: 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException',
        message: 'Requested resource not found',
      },
    });
    const error = await store.tryAcquire('job', 'a', 5000).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: false });
    expect((error as Error).message).toMatch(
      /the table does not exist; create it with \?createTable=true/,
    );
    expect(paths('UpdateItem')).toEqual(['wire']); // not retried
  });

  it('an endpoint that refuses the wire’s signature but takes the SDK’s: the call goes again through the SDK, and so does every later one', async () => {
    const store = await open();
    relay.intercept = ({ headers }) =>
      bySdk(headers)
        ? undefined
        : {
            status: 400,
            body: {
              __type: 'com.amazon.coral.service#IncompleteSignatureException',
              message:
                'Authorization header requires existence of either a X-Amz-Date or a Date header.',
            },
          };
    const lease = (await store.tryAcquire('job', 'a', 5000))!;
    expect(lease).toMatchObject({ owner: 'a', token: 1 });
    expect(await store.renew(lease)).toMatchObject({ token: 1 });
    expect(await store.release(lease)).toBe(true);
    // The refused request wrote nothing: one grant, token 1.
    expect(paths('UpdateItem')).toEqual(['wire', 'sdk', 'sdk', 'sdk']);
    expect(await store.get('job')).toMatchObject({ owner: '', token: 1, expiresAt: 0 });
  });
});
