import type { StoreOpenOptions, StoreUrl } from '../../core/store-url.js';
import { DynamodbStore } from './dynamodb-store.js';
import { parseDynamodbUrl } from './dynamodb-url.js';

/**
 * `dynamodb://TABLE?region=&endpoint=&maxClockSkewMs=&requestTimeoutMs=&connectTimeoutMs=&createTable=&concurrency=&fastPath=`.
 * Credentials come from the AWS SDK's default chain. `create` creates a missing table, as
 * `createTable=true` does.
 */
export async function openDynamodb(
  url: StoreUrl,
  options: StoreOpenOptions = {},
): Promise<DynamodbStore> {
  const target = parseDynamodbUrl(url);
  if (options.create) target.store.createTable = true;
  if (options.clock) target.store.clock = options.clock;
  return DynamodbStore.connect(target);
}
