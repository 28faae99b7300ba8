import { invalidArgument } from '../../core/errors.js';
import { checkBoolean, checkKnownKeys, describe, optionKeys } from '../../core/options.js';
import type { Clock } from '../../core/time.js';
import {
  AWS_DEFAULTS,
  resolveAwsConnect,
  resolveAwsOptions,
  type ResolvedAwsConnect,
  type ResolvedAwsOptions,
} from '../aws/aws-options.js';

/** Which bucket and prefix an `S3Store` uses, and its clock, timeouts and concurrency. */
export interface S3StoreOptions {
  /** The bucket holding the lease objects. Required when the store is given a client; an `s3://BUCKET` URL names it. */
  bucket?: string;
  /**
   * The key prefix, a "folder" of the bucket: each resource is one object `PREFIX/<encoded
   * resource>`. A `/` is added when it lacks one; `''` puts the objects at the top of the bucket.
   * @default ''
   */
  prefix?: string;
  /**
   * Clock disagreement, in ms, a contender allows before treating a record as expired. S3 has no
   * clock in a conditional write, so expiry is judged on the callers' clocks: set this to twice
   * the worst offset of any one host from true time (see docs/stores/dynamodb.md). @default 1000
   */
  maxClockSkewMs?: number;
  /**
   * Deadline of every S3 request, in ms, the SDK's own retries included, after which the call
   * fails with a retryable `STORE_UNAVAILABLE`: a paused or unreachable endpoint never makes a
   * call hang. A write that timed out may still land later. @default 5000
   */
  requestTimeoutMs?: number;
  /** Create the bucket when it is missing (what `leasehold init` asks for). @default false */
  createBucket?: boolean;
  /**
   * How many resources `acquireMany` / `renewMany` / `releaseMany` / `list` work on at once.
   * @default 16
   */
  concurrency?: number;
  /** Where "now" comes from when writing and judging `expiresAt`. @default the system clock */
  clock?: Pick<Clock, 'now'>;
  /**
   * Send the hot requests (the GET and conditional PUT of a record) signed by the store itself
   * over kept-alive connections, to the endpoint, path style, region and credentials the SDK
   * resolved for the store's first request, instead of through the SDK's middleware stack (see
   * docs/stores/s3.md). Only on a client the store made from a URL; an `S3Client` you pass always sends
   * everything itself, with your middleware. `false` sends every request through the SDK.
   * @default true
   */
  fastPath?: boolean;
}

/** Where a store that makes its own `S3Client` connects: what an `s3://` URL holds. */
export interface S3ConnectOptions {
  /** AWS region. @default the SDK's chain (`AWS_REGION`, profile) */
  region?: string;
  /** Endpoint URL of an S3-compatible service (`http://127.0.0.1:7480`). @default AWS's endpoint for the region */
  endpoint?: string;
  /** Address buckets as `ENDPOINT/BUCKET` rather than `BUCKET.ENDPOINT` (most S3-compatible services want this). @default false */
  forcePathStyle?: boolean;
  /** TCP connect deadline of each attempt, in ms. @default 5000 */
  connectTimeoutMs?: number;
  /** Static keys; the URL's user info (`s3://KEY_ID:SECRET@BUCKET/…`) gives them too. @default the SDK's default chain */
  credentials?: {
    /** The access key id. */
    accessKeyId: string;
    /** The secret access key (never shown in messages). */
    secretAccessKey: string;
  };
}

export const S3_DEFAULTS = Object.freeze({ ...AWS_DEFAULTS, prefix: '', createBucket: false });

export interface ResolvedS3Options extends ResolvedAwsOptions {
  readonly bucket: string;
  /** `''` or ending in `/`. */
  readonly prefix: string;
  readonly createBucket: boolean;
}

const S3_KEYS = optionKeys<S3StoreOptions & S3ConnectOptions & { sdk?: object }>({
  bucket: true,
  prefix: true,
  maxClockSkewMs: true,
  requestTimeoutMs: true,
  createBucket: true,
  concurrency: true,
  fastPath: true,
  clock: true,
  region: true,
  endpoint: true,
  forcePathStyle: true,
  connectTimeoutMs: true,
  credentials: true,
  sdk: true,
});

/** S3's rule for bucket names (3 to 63 lowercase letters, digits, `.` and `-`). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function checkBucket(value: unknown): string {
  if (typeof value !== 'string' || !BUCKET.test(value))
    throw invalidArgument(
      'bucket',
      `must be 3 to 63 lowercase letters, digits, . or -, starting and ending with a letter or digit, got ${describe(value)}`,
    );
  return value;
}

/** A prefix ends in `/` unless empty, so `leases` and `leases/` name the same folder. */
export function checkPrefix(value: unknown): string {
  if (typeof value !== 'string')
    throw invalidArgument('prefix', `must be a string, got ${describe(value)}`);
  // Listings come back as XML, which cannot carry most control characters; resource names
  // can hold them because the store escapes them in keys.
  if (!value.isWellFormed() || [...value].some((c) => c.charCodeAt(0) < 0x20))
    throw invalidArgument('prefix', 'must be well-formed text without control characters');
  if (Buffer.byteLength(value) > 256)
    throw invalidArgument('prefix', 'must be at most 256 UTF-8 bytes');
  return value === '' || value.endsWith('/') ? value : `${value}/`;
}

export function resolveS3Options(options: S3StoreOptions = {}): ResolvedS3Options {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('S3Store options', options, S3_KEYS);
  return {
    bucket: checkBucket(options.bucket),
    prefix: checkPrefix(options.prefix ?? S3_DEFAULTS.prefix),
    createBucket: checkBoolean('createBucket', options.createBucket ?? S3_DEFAULTS.createBucket),
    ...resolveAwsOptions(options),
  };
}

export interface ResolvedS3Connect extends ResolvedAwsConnect {
  readonly forcePathStyle?: boolean;
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

export function resolveS3Connect(options: S3ConnectOptions): ResolvedS3Connect {
  const { forcePathStyle, credentials } = options;
  const connect = resolveAwsConnect(
    options,
    'put them in the store URL (s3://KEY_ID:SECRET@BUCKET/…) or the SDK chain',
  );
  if (forcePathStyle !== undefined && typeof forcePathStyle !== 'boolean')
    throw invalidArgument('forcePathStyle', `must be a boolean, got ${describe(forcePathStyle)}`);
  if (credentials !== undefined) checkCredentials(credentials);
  return { ...connect, forcePathStyle, credentials };
}

/** Two non-empty strings; never quoted in a message. */
function checkCredentials(value: unknown): void {
  const c = value as { accessKeyId?: unknown; secretAccessKey?: unknown } | null;
  const ok = (v: unknown): boolean => typeof v === 'string' && v !== '';
  if (typeof c !== 'object' || c === null || !ok(c.accessKeyId) || !ok(c.secretAccessKey))
    throw invalidArgument(
      'credentials',
      'must be { accessKeyId, secretAccessKey }, two non-empty strings',
    );
}
