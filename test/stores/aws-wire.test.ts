import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import {
  amzDateOf,
  AwsWire,
  loadUndici,
  sha256,
  type WireTarget,
} from '../../src/stores/aws/aws-wire.js';
import { basePathOf, keyPath } from '../../src/stores/s3/s3-wire.js';

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
  request: { method?: string; path?: string; s3?: boolean } = {},
): Promise<string> {
  const signer = new SignatureV4({
    credentials,
    region: target.region,
    service: target.service,
    sha256: Sha256,
    applyChecksum: false,
    // S3 signs the path as sent; other services encode it once more (the same for `/`).
    uriEscapePath: request.s3 !== true,
  });
  const signed = await signer.sign(
    {
      method: request.method ?? 'POST',
      protocol: target.protocol,
      hostname: target.hostname,
      port: target.port,
      path: request.path ?? target.path,
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
const options = {
  credentials: () => Promise.reject(new Error('not used')),
  maxSockets: 1,
  attemptTimeoutMs: 1000,
  maxAttempts: 3,
  connectTimeoutMs: 1000,
  undici,
};

describe('AwsWire signatures (Signature Version 4), DynamoDB requests', () => {
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

  it.each([
    ['a loopback endpoint with a port, long-term keys', local, 'localhost', undefined],
    ['an AWS endpoint, session credentials', aws, aws.hostname, 'IQoJb3JpZ2luX2VjE//token+/='],
  ])('matches the SDK signer for %s', async (_, target, _host, sessionToken) => {
    const wire = new AwsWire(target, options);
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
        const mine = wire.sign(
          { ...credentials, secretAccessKey: secret },
          amzDate,
          'POST',
          '/',
          headers,
          sha256(body),
        );
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
    const wire = new AwsWire(local, options);
    const credentials = { accessKeyId: 'AKID', secretAccessKey: 'secret' };
    const amzDate = amzDateOf(Date.UTC(2026, 0, 1));
    const headers = wireHeaders('127.0.0.1:8000', amzDate, 'UpdateItem');
    const base = wire.sign(credentials, amzDate, 'POST', '/', headers, sha256(body));
    expect(wire.sign(credentials, amzDate, 'POST', '/', headers, sha256(`${body} `))).not.toBe(
      base,
    );
    expect(
      wire.sign(
        credentials,
        amzDate,
        'POST',
        '/',
        wireHeaders('127.0.0.1:8000', amzDate, 'GetItem'),
        sha256(body),
      ),
    ).not.toBe(base);
    expect(
      wire.sign(
        { ...credentials, secretAccessKey: 'other' },
        amzDate,
        'POST',
        '/',
        headers,
        sha256(body),
      ),
    ).not.toBe(base);
    expect(base).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKID\/20260101\/us-east-1\/dynamodb\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=[0-9a-f]{64}$/,
    );
    wire.destroy();
  });
});

describe('AwsWire signatures (Signature Version 4), S3 requests', () => {
  const rgw: WireTarget = {
    protocol: 'http:',
    hostname: '127.0.0.1',
    port: 7480,
    path: '/leasehold/x',
    region: 'us-east-1',
    service: 's3',
  };
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG' };

  it.each([
    ['a GET', 'GET', '', {}],
    [
      'a PUT with If-Match',
      'PUT',
      '{"owner":"a","token":3}',
      { 'if-match': '"9b2cf535f27731c974343645a3985328"' },
    ],
    ['a create with If-None-Match', 'PUT', '{"owner":"b"}', { 'if-none-match': '*' }],
  ])(
    'matches the SDK signer for %s of a key that needs escaping',
    async (_, method, body, extra) => {
      const wire = new AwsWire(rgw, options);
      const path = `/leasehold/${keyPath("leases/jobs ünï (1)*!'~%.json")}`;
      const at = Date.UTC(2026, 11, 3, 12, 0, 0);
      const amzDate = amzDateOf(at);
      const headers: Record<string, string> = {
        ...(method === 'PUT' ? { 'content-type': 'application/json' } : {}),
        ...extra,
        host: '127.0.0.1:7480',
        'x-amz-content-sha256': sha256(body),
        'x-amz-date': amzDate,
      };
      const sorted = Object.entries(headers).sort(([a], [b]) => (a < b ? -1 : 1));
      const mine = wire.sign(credentials, amzDate, method, path, sorted, sha256(body));
      const given = Object.fromEntries(sorted.filter(([name]) => name !== 'x-amz-date'));
      const sdk = await sdkSignature(rgw, credentials, at, given, body, { method, path, s3: true });
      expect(mine).toBe(sdk);
      wire.destroy();
    },
  );

  it('puts a key in a path as the SDK does, and finds the base path the SDK put before it', () => {
    expect(keyPath('a/b c/ü!*')).toBe('a/b%20c/%C3%BC%21%2A');
    expect(basePathOf('/bucket/p/a%20b', 'p/a b')).toBe('/bucket/');
    expect(basePathOf('/p/a%20b', 'p/a b')).toBe('/'); // virtual-hosted
    expect(basePathOf('/gw/bucket/p/k', 'p/k')).toBe('/gw/bucket/'); // an endpoint with a path
    expect(basePathOf('/bucket/p/other', 'p/k')).toBeUndefined();
    expect(basePathOf('p/k', 'p/k')).toBeUndefined();
  });
});
