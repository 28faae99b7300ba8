export { DynamodbStore } from './dynamodb-store.js';
export type { DynamodbClient } from './dynamodb-driver.js';
export type { DynamodbSdkOption } from './dynamodb-store.js';
export type { DynamodbConnectOptions, DynamodbStoreOptions } from './dynamodb-options.js';
