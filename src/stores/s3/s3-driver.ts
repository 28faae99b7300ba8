import { attemptTimeoutMs, checkSdk } from '../aws/aws-sdk.js';
import { loadDriver } from '../../core/load-driver.js';

/** A command object from `@aws-sdk/client-s3`; only the SDK looks inside. */
export type S3Command = object;

/** The part of an `S3Client` (from `@aws-sdk/client-s3` v3) this store uses. */
export interface S3Client {
  /** Sends one command; the store passes an `abortSignal` carrying its deadline on a client you made. */
  send(command: S3Command, options?: { abortSignal?: AbortSignal }): Promise<unknown>;
}

type CommandClass = new (input: object) => S3Command;

/** The part of the `@aws-sdk/client-s3` module this store uses. */
export interface S3Module {
  S3Client: new (config: object) => S3Client & { destroy(): void };
  GetObjectCommand: CommandClass;
  PutObjectCommand: CommandClass;
  DeleteObjectCommand: CommandClass;
  ListObjectsV2Command: CommandClass;
  CreateBucketCommand: CommandClass;
  /** Read by `diagnose` alone; optional so that a module made of parts still types. */
  GetBucketReplicationCommand?: CommandClass;
  GetBucketLifecycleConfigurationCommand?: CommandClass;
  GetBucketVersioningCommand?: CommandClass;
}

export const SDK_CLASSES = [
  'S3Client',
  'GetObjectCommand',
  'PutObjectCommand',
  'DeleteObjectCommand',
  'ListObjectsV2Command',
  'CreateBucketCommand',
] as const;

export const SDK_PACKAGE = '@aws-sdk/client-s3';

export function loadSdk(): Promise<S3Module> {
  return loadDriver<S3Module>(SDK_PACKAGE, 's3');
}

/** For bundlers, which cannot see the store's own `import()` of the AWS SDK. */
export interface S3SdkOption {
  /** The `@aws-sdk/client-s3` module, imported by you, used instead of loading it by name. */
  sdk?: object;
}

/** The SDK module a caller passed, checked for what the store uses, or the one loaded by name. */
export async function sdkOf(given: object | undefined): Promise<S3Module> {
  return given === undefined ? loadSdk() : checkSdk<S3Module>(given, SDK_CLASSES, SDK_PACKAGE);
}

export { attemptTimeoutMs } from '../aws/aws-sdk.js';

/** Where a store that makes its own `S3Client` connects, and with which keys. */
export interface S3ClientConfig {
  readonly region?: string;
  readonly endpoint?: string;
  readonly forcePathStyle?: boolean;
  readonly connectTimeoutMs: number;
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

/**
 * A client for what a URL names. Credentials come from the URL's user info when it has them,
 * else from the SDK's default chain (environment, profile, role).
 */
export function createClient(
  sdk: S3Module,
  config: S3ClientConfig,
  requestTimeoutMs: number,
): S3Client & { destroy(): void } {
  return new sdk.S3Client({
    region: config.region,
    endpoint: config.endpoint,
    forcePathStyle: config.forcePathStyle,
    credentials: config.credentials && { ...config.credentials },
    maxAttempts: 3,
    // Checksums on every PUT and GET cost time and are not understood by every S3-compatible
    // service; the records are a few dozen bytes sent over TLS or loopback.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: {
      connectionTimeout: config.connectTimeoutMs,
      requestTimeout: attemptTimeoutMs(requestTimeoutMs),
      throwOnRequestTimeout: true,
    },
  });
}
