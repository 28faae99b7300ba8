import type { StoreOpenOptions, StoreUrl } from '../../core/store-url.js';
import { S3Store } from './s3-store.js';
import { parseS3Url } from './s3-url.js';

/**
 * `s3://[KEY_ID:SECRET@]BUCKET/PREFIX?region=&endpoint=&forcePathStyle=&maxClockSkewMs=&requestTimeoutMs=&connectTimeoutMs=&concurrency=&createBucket=`.
 * Credentials come from the user info, else the AWS SDK's default chain. `create` creates a
 * missing bucket, as `createBucket=true` does.
 */
export async function openS3(url: StoreUrl, options: StoreOpenOptions = {}): Promise<S3Store> {
  const target = parseS3Url(url);
  if (options.create) target.store.createBucket = true;
  if (options.clock) target.store.clock = options.clock;
  return S3Store.connect(target);
}
