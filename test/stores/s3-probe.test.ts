import { afterAll, beforeAll, expect, it } from 'vitest';
import { LeaseError } from '../../src/index.js';
import { S3Store } from '../../src/stores/s3/index.js';
import { describeServer } from '../harness/describe-server.js';
import {
  S3RVER_KEYS,
  s3rverUnavailable,
  startS3rver,
  type S3rverServer,
} from '../harness/s3rver-server.js';

describeServer('S3 store start-up probe on s3rver', s3rverUnavailable(), () => {
  let server: S3rverServer;
  beforeAll(async () => {
    server = await startS3rver();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('refuses an endpoint that ignores If-None-Match with STORE_UNSAFE naming the guarantee', async () => {
    const error = await S3Store.open(server.url('leases')).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LeaseError);
    const e = error as LeaseError;
    expect(e.code).toBe('STORE_UNSAFE');
    expect(e.retryable).toBe(false);
    expect(e.message).toContain('create-only-if-absent');
    expect(e.message).toContain('If-None-Match: *');
    expect(e.message).toContain(server.endpoint);
    expect(e.message).not.toContain(S3RVER_KEYS.secretAccessKey);
  });

  it('leaves nothing behind in the bucket when it refuses', async () => {
    await S3Store.open(server.url('clean')).catch(() => {});
    const { S3Client, ListObjectsV2Command } = await import('@aws-sdk/client-s3');
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: server.endpoint,
      forcePathStyle: true,
      credentials: { ...S3RVER_KEYS },
    });
    try {
      const listed = await client.send(
        new ListObjectsV2Command({ Bucket: 'leasehold', Prefix: 'clean/' }),
      );
      expect(listed.Contents ?? []).toEqual([]);
    } finally {
      client.destroy();
    }
  });
});
