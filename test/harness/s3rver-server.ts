import { createRequire } from 'node:module';
import { tempDir } from './processes.js';

const require = createRequire(import.meta.url);

// The SDK warns once per process that its releases after 2026 need Node 22; tests pin the version.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}
type S3rverClass = new (options: object) => S3rverInstance;

/** Why s3rver or the AWS SDK cannot run here, or `null` when they can. */
export function s3rverUnavailable(): string | null {
  for (const pkg of ['s3rver', '@aws-sdk/client-s3']) {
    try {
      require.resolve(pkg);
    } catch {
      return `the ${pkg} package is not installed`;
    }
  }
  return null;
}

/**
 * s3rver (an S3 emulator from npm) in the test process on a free 127.0.0.1 port, with one
 * bucket, its objects in a temp folder. It ignores `If-None-Match` and `If-Match` on PUT: an
 * endpoint the store must refuse.
 */
export interface S3rverServer {
  readonly port: number;
  /** `http://127.0.0.1:PORT`. */
  readonly endpoint: string;
  /** `s3://KEY:SECRET@BUCKET/PREFIX?…` for this endpoint (s3rver accepts its fixed test keys). */
  url(prefix?: string, params?: Record<string, string | number | boolean>): string;
  stop(): Promise<void>;
}

/** s3rver's fixed keys (it checks signatures with them). */
export const S3RVER_KEYS = Object.freeze({ accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });

export async function startS3rver(bucket = 'leasehold'): Promise<S3rverServer> {
  const S3rver = require('s3rver') as S3rverClass;
  const dir = tempDir('leasehold-s3rver-');
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: dir.path,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    port,
    endpoint,
    url: (prefix = '', params = {}) => {
      const query = new URLSearchParams({
        region: 'us-east-1',
        endpoint,
        forcePathStyle: 'true',
        ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])),
      });
      return `s3://${S3RVER_KEYS.accessKeyId}:${S3RVER_KEYS.secretAccessKey}@${bucket}/${prefix}?${query}`;
    },
    stop: async () => {
      await server.close();
      dir.cleanup();
    },
  };
}
