import { invalidArgument } from '../../core/errors.js';
import {
  checkBoolean,
  checkConcurrency,
  checkInteger,
  checkNowClock,
  describe,
} from '../../core/options.js';
import { systemClock, type Clock } from '../../core/time.js';

/** The defaults the AWS stores share; each store's own defaults object adds to them. */
export const AWS_DEFAULTS = Object.freeze({
  maxClockSkewMs: 1000,
  requestTimeoutMs: 5000,
  connectTimeoutMs: 5000,
  concurrency: 16,
  fastPath: true,
});

/** The store options both AWS stores have (each store's options type documents them). */
interface AwsStoreOptions {
  maxClockSkewMs?: number;
  requestTimeoutMs?: number;
  concurrency?: number;
  clock?: Pick<Clock, 'now'>;
  fastPath?: boolean;
}

export interface ResolvedAwsOptions {
  readonly maxClockSkewMs: number;
  readonly requestTimeoutMs: number;
  readonly concurrency: number;
  readonly clock: Pick<Clock, 'now'>;
  readonly fastPath: boolean;
}

/** Checks the options both AWS stores have and applies their defaults. */
export function resolveAwsOptions(options: AwsStoreOptions): ResolvedAwsOptions {
  const clock = checkNowClock(options.clock ?? systemClock);
  const concurrency = checkConcurrency(options.concurrency ?? AWS_DEFAULTS.concurrency);
  return {
    maxClockSkewMs: checkInteger(
      'maxClockSkewMs',
      options.maxClockSkewMs ?? AWS_DEFAULTS.maxClockSkewMs,
      0,
      3_600_000,
    ),
    requestTimeoutMs: checkInteger(
      'requestTimeoutMs',
      options.requestTimeoutMs ?? AWS_DEFAULTS.requestTimeoutMs,
      100,
      600_000,
    ),
    concurrency,
    clock,
    fastPath: checkBoolean('fastPath', options.fastPath ?? AWS_DEFAULTS.fastPath),
  };
}

/** Where a store that makes its own SDK client connects: the fields both stores' URLs hold. */
interface AwsConnectOptions {
  region?: string;
  endpoint?: string;
  connectTimeoutMs?: number;
}

export interface ResolvedAwsConnect {
  readonly region?: string;
  readonly endpoint?: string;
  readonly connectTimeoutMs: number;
}

/**
 * Checks `region`, `endpoint` and `connectTimeoutMs`. An endpoint must not carry credentials:
 * `credentialsGo` finishes that message, saying where the store takes them from instead.
 */
export function resolveAwsConnect(
  options: AwsConnectOptions,
  credentialsGo: string,
): ResolvedAwsConnect {
  const { region, endpoint } = options;
  if (region !== undefined && (typeof region !== 'string' || !/^[a-z0-9-]{1,64}$/.test(region)))
    throw invalidArgument('region', `must look like us-east-1, got ${describe(region)}`);
  if (endpoint !== undefined) checkEndpoint(endpoint, credentialsGo);
  return {
    region,
    endpoint,
    connectTimeoutMs: checkInteger(
      'connectTimeoutMs',
      options.connectTimeoutMs ?? AWS_DEFAULTS.connectTimeoutMs,
      1,
      600_000,
    ),
  };
}

/** An http(s) URL without credentials in it. */
function checkEndpoint(value: unknown, credentialsGo: string): string {
  if (typeof value !== 'string' || !URL.canParse(value))
    throw invalidArgument('endpoint', 'must be an http:// or https:// URL');
  const url = new URL(value);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalidArgument('endpoint', `must be an http:// or https:// URL, got ${url.protocol}`);
  if (url.username !== '' || url.password !== '')
    throw invalidArgument('endpoint', `must not hold credentials: ${credentialsGo}`);
  return value;
}
