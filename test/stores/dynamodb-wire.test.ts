import { afterAll, beforeAll, expect, it } from 'vitest';
import { LeaseError, openStore, type LeaseStore } from '../../src/index.js';
import {
  dynaliteUnavailable,
  startDynalite,
  type DynaliteServer,
} from '../harness/dynalite-server.js';
import { describeServer } from '../harness/describe-server.js';
import { awsRelay, type AwsRelay } from '../harness/aws-relay.js';

describeServer('DynamoDB store: the hot calls by the wire', dynaliteUnavailable(), () => {
  let server: DynaliteServer;
  let relay: AwsRelay;
  const stores: LeaseStore[] = [];
  let tables = 0;

  beforeAll(async () => {
    server = await startDynalite();
    relay = await awsRelay(server);
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
  it('after a refused signature, an SDK answer that is itself a refusal (the condition failed) also shows the SDK’s signature is taken: the wire stays off', async () => {
    const store = await open();
    const held = (await store.tryAcquire('job', 'a', 5000))!;
    relay.intercept = ({ headers }) =>
      bySdk(headers)
        ? undefined
        : {
            status: 400,
            body: {
              __type: 'com.amazon.coral.service#InvalidSignatureException',
              message: 'The request signature we calculated does not match.',
            },
          };
    expect(await store.tryAcquire('job', 'b', 5000)).toBeNull(); // held by a: condition failed
    expect(await store.renew(held)).toMatchObject({ owner: 'a', token: 1 });
    expect(paths('UpdateItem')).toEqual(['wire', 'wire', 'sdk', 'sdk']);
  });
});
