import { invalidArgument } from '../../core/errors.js';
import { redactEndpoint } from '../../core/store-url.js';
import { fromSdkConfig, loadUndici } from '../aws/aws-wire.js';
import {
  attemptTimeoutMs,
  createClient,
  sdkOf,
  type S3Client,
  type S3Module,
  type S3SdkOption,
} from './s3-driver.js';
import type { WireSetup } from './s3-objects.js';
import {
  resolveS3Connect,
  resolveS3Options,
  type ResolvedS3Options,
  type S3ConnectOptions,
  type S3StoreOptions,
} from './s3-options.js';
import type { S3Target } from './s3-url.js';

/** What a store is started with: its client and SDK, its options, and how it names the endpoint. */
export interface S3Connection {
  readonly client: S3Client;
  readonly sdk: S3Module;
  readonly options: ResolvedS3Options;
  /** ` at <endpoint>` (redacted) or ` in <region>`, for messages; empty for a caller's client. */
  readonly where: string;
  /** Whether the store made the client, and so destroys it on `close()`. */
  readonly ownsClient: boolean;
  /** The region to create the bucket in (`createBucket`), on AWS only. */
  readonly bucketRegion: string | undefined;
  /** The fast path's set-up (`fastPath`), on a client the store made. */
  readonly setup?: WireSetup;
}

/** Everything `open` accepts beside the URL or client. */
export type S3OpenOptions = S3StoreOptions & S3ConnectOptions & S3SdkOption;

/**
 * A client the caller made: it stays theirs. The connection options belong on it, so passing
 * them here is refused with `INVALID_ARGUMENT`.
 */
export async function withClient(client: S3Client, options: S3OpenOptions): Promise<S3Connection> {
  if (typeof (client as Partial<S3Client> | null)?.send !== 'function')
    throw invalidArgument('target', 'must be an s3:// URL or an S3Client');
  const { region, endpoint, forcePathStyle, connectTimeoutMs, credentials, sdk, ...rest } = options;
  if (
    [region, endpoint, forcePathStyle, connectTimeoutMs, credentials].some((v) => v !== undefined)
  )
    throw invalidArgument(
      'options',
      'region, endpoint, forcePathStyle, connectTimeoutMs and credentials belong on your S3Client, not the store',
    );
  const resolved = resolveS3Options(rest);
  return {
    client,
    sdk: await sdkOf(sdk),
    options: resolved,
    where: '',
    ownsClient: false,
    bucketRegion: undefined,
  };
}

/**
 * A client made from a parsed URL and `options` (which override its parameters), with the fast
 * path's set-up when `fastPath` is on. Bad options fail before anything loads.
 */
export async function fromUrl(target: S3Target, options: S3OpenOptions): Promise<S3Connection> {
  const defined = Object.fromEntries(
    Object.entries(options).filter(([, v]) => v !== undefined),
  ) as S3OpenOptions;
  const { sdk: given, ...merged } = { ...target.store, ...target.connect, ...defined };
  const { region, endpoint, forcePathStyle, connectTimeoutMs, credentials, ...store } = merged;
  const resolved = resolveS3Options(store);
  const connect = resolveS3Connect({
    region,
    endpoint,
    forcePathStyle,
    connectTimeoutMs,
    credentials,
  });
  const sdk = await sdkOf(given);
  const client = createClient(sdk, connect, resolved.requestTimeoutMs);
  const shared = resolved.fastPath ? fromSdkConfig(client) : undefined;
  const setup: WireSetup | undefined = shared && {
    undici: await loadUndici(),
    shared,
    connectTimeoutMs: connect.connectTimeoutMs,
    attemptTimeoutMs: attemptTimeoutMs(resolved.requestTimeoutMs),
    maxSockets: resolved.concurrency,
  };
  const where = connect.endpoint
    ? ` at ${redactEndpoint(connect.endpoint)}`
    : connect.region
      ? ` in ${connect.region}`
      : '';
  return {
    client,
    sdk,
    options: resolved,
    where,
    ownsClient: true,
    bucketRegion: connect.endpoint ? undefined : connect.region,
    ...(setup ? { setup } : {}),
  };
}
