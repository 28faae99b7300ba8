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

/** Which table a `DynamodbStore` uses, and its clock, timeouts and concurrency. */
export interface DynamodbStoreOptions {
  /**
   * The table holding the lease records: partition key `resource` (String), no sort key.
   * Required when the store is given a client; a `dynamodb://TABLE` URL names it.
   */
  table?: string;
  /**
   * Clock disagreement, in ms, a contender allows before treating a record as expired. DynamoDB has no
   * clock of its own in a condition, so expiry is judged on the callers' clocks: set this to twice
   * the worst offset of any one host from true time (see docs/stores/dynamodb.md). @default 1000
   */
  maxClockSkewMs?: number;
  /**
   * Deadline of every store call, in ms, the SDK's own retries included, after which it fails with a
   * retryable `STORE_UNAVAILABLE`: a paused or unreachable endpoint never makes a call hang. A
   * write that timed out may still land later. @default 5000
   */
  requestTimeoutMs?: number;
  /** Create the table (on-demand capacity) when it is missing, and wait until it is active. @default false */
  createTable?: boolean;
  /**
   * How many per-resource updates `acquireMany` / `renewMany` / `releaseMany` keep in flight at
   * once. @default 16
   */
  concurrency?: number;
  /** Where "now" comes from when writing and judging `expiresAt`. @default the system clock */
  clock?: Pick<Clock, 'now'>;
  /**
   * Send the hot calls (`UpdateItem`, `GetItem`) as DynamoDB JSON requests signed by the store
   * itself over kept-alive connections, to the endpoint, region and credentials the SDK resolved,
   * instead of through the SDK's middleware stack: about a fifth of the client CPU per call (see
   * docs/stores/dynamodb.md). Only on a client the store made from a URL; a `DynamoDBClient` you pass always
   * sends everything itself, with your middleware. `false` sends every call through the SDK.
   * @default true
   */
  fastPath?: boolean;
}

/** Where a store that makes its own `DynamoDBClient` connects: what a `dynamodb://` URL holds. */
export interface DynamodbConnectOptions {
  /** AWS region. @default the SDK's chain (`AWS_REGION`, profile), or `us-east-1` for a loopback endpoint */
  region?: string;
  /** Endpoint URL, for DynamoDB Local or dynalite (`http://127.0.0.1:8000`). @default AWS's endpoint for the region */
  endpoint?: string;
  /** TCP connect deadline of each attempt, in ms. @default 5000 */
  connectTimeoutMs?: number;
}

export const DYNAMODB_DEFAULTS = Object.freeze({ ...AWS_DEFAULTS, createTable: false });

export interface ResolvedDynamodbOptions extends ResolvedAwsOptions {
  readonly table: string;
  readonly createTable: boolean;
}

/**
 * `DynamodbStore.open` resolves one object holding the store's fields, the connection's and `sdk`
 * (the module it was handed), so all of them are known.
 */
const DYNAMODB_KEYS = optionKeys<DynamodbStoreOptions & DynamodbConnectOptions & { sdk?: object }>({
  table: true,
  maxClockSkewMs: true,
  requestTimeoutMs: true,
  createTable: true,
  concurrency: true,
  clock: true,
  fastPath: true,
  region: true,
  endpoint: true,
  connectTimeoutMs: true,
  sdk: true,
});

/** DynamoDB's own rule for table names. */
const TABLE = /^[A-Za-z0-9_.-]{3,255}$/;

export function checkTable(value: unknown): string {
  if (typeof value !== 'string' || !TABLE.test(value)) {
    throw invalidArgument(
      'table',
      `must be 3 to 255 letters, digits, _ . or -, got ${describe(value)}`,
    );
  }
  return value;
}

export function resolveDynamodbOptions(
  options: DynamodbStoreOptions = {},
): ResolvedDynamodbOptions {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('DynamodbStore options', options, DYNAMODB_KEYS);
  return {
    table: checkTable(options.table),
    createTable: checkBoolean('createTable', options.createTable ?? DYNAMODB_DEFAULTS.createTable),
    ...resolveAwsOptions(options),
  };
}

export function resolveConnectOptions(options: DynamodbConnectOptions): ResolvedAwsConnect {
  return resolveAwsConnect(
    options,
    'AWS credentials come from the SDK (environment, profile or role)',
  );
}

/** Whether an endpoint is on this machine, where a local DynamoDB accepts any credentials. */
export function isLoopback(endpoint: string): boolean {
  const host = new URL(endpoint).hostname.replace(/^\[(.*)\]$/, '$1');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
