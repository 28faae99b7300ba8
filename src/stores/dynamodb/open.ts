import { ErrorCode, isLeaseError, LeaseError } from '../../core/errors.js';
import type { OpenStoreOptions, StoreUrl } from '../../core/open-store.js';
import { DynamodbStore } from './dynamodb-store.js';
import { parseDynamodbUrl, redactEndpoint } from './dynamodb-url.js';

/**
 * `dynamodb://TABLE?region=&endpoint=&maxClockSkewMs=&requestTimeoutMs=&connectTimeoutMs=&createTable=&concurrency=`.
 * Credentials come from the AWS SDK's default chain.
 */
export async function openDynamodb(
  url: StoreUrl,
  options: OpenStoreOptions = {},
): Promise<DynamodbStore> {
  const target = parseDynamodbUrl(url);
  if (options.create) target.store.createTable = true;
  try {
    return await DynamodbStore.connect(target);
  } catch (error) {
    if (isLeaseError(error, ErrorCode.INVALID_ARGUMENT)) {
      throw new LeaseError(
        ErrorCode.STORE_URL_INVALID,
        `${error.message} in ${redactEndpoint(url.redacted)}`,
        { cause: error },
      );
    }
    throw error;
  }
}
