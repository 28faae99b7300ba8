export { S3Store } from './s3-store.js';
export type { S3Client, S3SdkOption } from './s3-driver.js';
export type { S3ConnectOptions, S3StoreOptions } from './s3-options.js';
