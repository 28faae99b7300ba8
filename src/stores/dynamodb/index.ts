export { DynamodbStore } from './dynamodb-store.js';
export type { DynamodbClient, DynamodbSdkOption } from './dynamodb-driver.js';
export type { DynamodbConnectOptions, DynamodbStoreOptions } from './dynamodb-options.js';
