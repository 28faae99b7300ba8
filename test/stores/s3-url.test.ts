import { describe, expect, it } from 'vitest';
import { LeaseError } from '../../src/index.js';
import { parseStoreUrl } from '../../src/core/store-url.js';
import { decodeResource, encodeResource, KeySpace } from '../../src/stores/s3/s3-keys.js';
import { S3Store } from '../../src/stores/s3/index.js';
import { parseS3Url } from '../../src/stores/s3/s3-url.js';
import { compareResources } from '../../src/core/store.js';

const parse = (text: string) => parseS3Url(parseStoreUrl(text));

function failure(fn: () => unknown): LeaseError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(LeaseError);
    return error as LeaseError;
  }
  throw new Error('expected a LeaseError');
}

describe('s3:// URLs', () => {
  it('reads bucket, prefix, parameters and keys', () => {
    const target = parse(
      's3://AKID:se%2Fcr%40et@my-bucket/leases/prod?region=eu-west-1&endpoint=http://127.0.0.1:9000&forcePathStyle=true&maxClockSkewMs=250&requestTimeoutMs=2000&concurrency=4&createBucket=true',
    );
    expect(target.store).toMatchObject({
      bucket: 'my-bucket',
      prefix: 'leases/prod',
      maxClockSkewMs: 250,
      requestTimeoutMs: 2000,
      concurrency: 4,
      createBucket: true,
    });
    expect(target.connect).toMatchObject({
      region: 'eu-west-1',
      endpoint: 'http://127.0.0.1:9000',
      forcePathStyle: true,
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'se/cr@et' },
    });
    expect(target.redacted).toBe(
      's3://***@my-bucket/leases/prod?region=eu-west-1&endpoint=http://127.0.0.1:9000&forcePathStyle=true&maxClockSkewMs=250&requestTimeoutMs=2000&concurrency=4&createBucket=true',
    );
    expect(parse('s3://bucket').store).toMatchObject({ bucket: 'bucket', prefix: '' });
    expect(parse('s3://bucket').connect.credentials).toBeUndefined();
  });

  it('refuses bad URLs without quoting the keys', () => {
    for (const [url, problem] of [
      ['s3://AKID:topsecret@bucket/p?regoin=x', 'unknown parameter "regoin"'],
      ['s3://AKID:topsecret@Bad_Bucket/p', 'bucket must be 3 to 63'],
      ['s3://AKID:topsecret@bucket/p?maxClockSkewMs=-1', 'maxClockSkewMs'],
      ['s3://AKID:topsecret@bucket/p?forcePathStyle=yes', 'forcePathStyle'],
      ['s3://AKID:topsecret@bucket/p?endpoint=ftp://x', 'endpoint must be an http'],
      ['s3://AKID@bucket/p', 'user info without a secret'],
      ['s3:bucket', 'no bucket'],
    ] as const) {
      const error = failure(() => parse(url));
      expect(error.code).toBe('STORE_URL_INVALID');
      expect(error.message).toContain(problem);
      expect(error.message).not.toContain('topsecret');
      expect(error.message).not.toContain('AKID');
    }
  });

  it('a client you pass keeps its own connection settings', async () => {
    const client = { send: async () => ({}) };
    const error = await S3Store.open(client, { bucket: 'bucket', region: 'us-east-1' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LeaseError);
    expect((error as LeaseError).code).toBe('INVALID_ARGUMENT');
    expect((error as LeaseError).message).toContain('belong on your S3Client');
  });
});

describe('object keys', () => {
  const names = [
    'a',
    'a/b',
    'a b',
    'a!',
    '!',
    '.',
    '..',
    'a.b',
    'Z',
    'é',
    '\uffff',
    '🚀',
    'a\tb',
    '0',
    '~',
  ];

  it('escape characters up to "/" and keep the resources order and prefixes', () => {
    expect(encodeResource('job/1 a.b')).toBe('job!2f1!20a!2eb');
    expect(encodeResource('..')).toBe('!2e!2e');
    for (const name of names) expect(decodeResource(encodeResource(name))).toBe(name);
    const byKey = [...names].sort((a, b) =>
      Buffer.compare(Buffer.from(encodeResource(a)), Buffer.from(encodeResource(b))),
    );
    expect(byKey).toEqual([...names].sort(compareResources));
    for (const a of names)
      for (const b of names)
        expect(encodeResource(b).startsWith(encodeResource(a))).toBe(b.startsWith(a));
  });

  it('are never the probe key, and foreign keys are no resource', () => {
    const keys = new KeySpace('bucket', 'leases/');
    expect(keys.resourceOf(keys.probeKey('x'))).toBeUndefined();
    for (const foreign of ['leases/a/b', 'leases/a!zz', 'leases/a!7e', 'leases/', 'other/a'])
      expect(keys.resourceOf(foreign)).toBeUndefined();
    expect(keys.resourceOf('leases/a!2fb')).toBe('a/b');
    const error = failure(() => keys.keyOf('/'.repeat(400)));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain('1024');
  });
});
