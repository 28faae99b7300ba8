import { createHash, createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Pool } from 'undici';

/**
 * Where and how the AWS SDK itself sent a request, read off one it signed (see `captureTarget`):
 * the wire sends its own requests there, signed for the same region and service.
 */
export interface WireTarget {
  readonly protocol: 'http:' | 'https:';
  readonly hostname: string;
  readonly port: number | undefined;
  /** The path of the request it was read from (without its query). */
  readonly path: string;
  readonly region: string;
  readonly service: string;
}

/** AWS credentials as the SDK's provider answers them. */
export interface WireCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** The part of the `undici` module the wire uses, imported when a store first needs it. */
export interface Undici {
  readonly Pool: typeof Pool;
}

/** Imports undici (a dependency of leasehold), only when a store sends by the wire. */
export function loadUndici(): Promise<Undici> {
  return import('undici');
}

export interface WireOptions {
  /** The SDK client's own credential provider (it caches and refreshes them). */
  readonly credentials: () => Promise<WireCredentials>;
  /** Connections kept open to the endpoint. */
  readonly maxSockets: number;
  /** What one attempt may take before it counts as a timeout. */
  readonly attemptTimeoutMs: number;
  /** Attempts per call, as the SDK client is configured (3). */
  readonly maxAttempts: number;
  /** TCP (and TLS) connect deadline of each new connection. */
  readonly connectTimeoutMs: number;
  /** The undici module (see `loadUndici`). */
  readonly undici: Undici;
  /** Now, in ms since the epoch, for the signature's date. @default Date.now */
  readonly now?: () => number;
}

/** One request: lower-case header names, without `host`, `x-amz-date`, the token and the signature. */
export interface WireRequest {
  readonly method: 'GET' | 'PUT' | 'POST';
  /** The path as sent, each segment URI-encoded once; no query. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Sign the body's hash into an `x-amz-content-sha256` header, as S3 requires. */
  readonly contentHash?: boolean;
}

/** One answer of the endpoint, read whole. */
export interface WireAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
}

/** What a service makes of an answer: its value, or the error and whether to try again. */
export type Reading<T> =
  | { readonly error?: undefined; readonly value: T }
  | { readonly error: WireError; readonly retry: boolean; readonly throttled: boolean };

/** An error shaped as the SDK's service and transport errors are. */
export interface WireError extends Error {
  $fault: 'client' | 'server';
  $metadata: { httpStatusCode?: number; attempts?: number };
  [field: string]: unknown;
}

/**
 * Hot calls of an AWS store sent over kept-alive connections of an undici `Pool` and signed with
 * Signature Version 4 here, instead of through the SDK's middleware stack and node:http. Profiled,
 * the SDK spends 0.5–2 ms of client CPU per small request (its schema serializer, endpoint rules,
 * user agent, retry, checksum and signing middlewares, and node:http), which caps how many leases
 * one process can renew; undici's client alone costs about half of node:http's CPU per request
 * (65 against 145 µs, measured). What the SDK decides stays the SDK's:
 *
 * - the endpoint, region and signing name are the ones the SDK resolved and signed with for one
 *   of the store's own requests (see `captureTarget`), so endpoint rules, FIPS, dual-stack and
 *   custom endpoints are its to decide;
 * - credentials come from the SDK client's own provider on every call (it caches and refreshes
 *   them, so an expiring role session is renewed as for the SDK), and the clock offset the SDK
 *   learnt from the endpoint goes into `now`;
 * - retries follow the SDK's standard mode: up to `maxAttempts` attempts on throttling, 5xx,
 *   timeouts and dropped connections, with full-jitter exponential backoff (base 100 ms, 500 ms
 *   when throttled); each attempt has `attemptTimeoutMs`;
 * - errors are shaped as the SDK's (`name`, `message`, `$fault`, `$metadata.httpStatusCode` and
 *   `.attempts`), so a store reads them the same.
 *
 * What it does not do, which the SDK would: the client-side retry quota, and any middleware added
 * to a client — which is why only a client a store made itself uses this path.
 */
export class AwsWire {
  private readonly pool: Pool;
  /** The `host` header: the hostname, and the port when it is not the scheme's. */
  readonly host: string;
  private readonly scopeTail: string;
  private readonly now: () => number;
  private signingKey: { secret: string; day: string; key: Buffer } | undefined;
  private dateSecond = NaN;
  private dateText = '';

  constructor(
    readonly target: WireTarget,
    private readonly options: WireOptions,
  ) {
    const defaultPort = target.protocol === 'https:' ? 443 : 80;
    this.host =
      target.port === undefined || target.port === defaultPort
        ? target.hostname
        : `${target.hostname}:${target.port}`;
    this.scopeTail = `/${target.region}/${target.service}/aws4_request`;
    this.now = options.now ?? Date.now;
    this.pool = new options.undici.Pool(`${target.protocol}//${this.host}`, {
      connections: options.maxSockets,
      connectTimeout: options.connectTimeoutMs,
      headersTimeout: options.attemptTimeoutMs,
      bodyTimeout: options.attemptTimeoutMs,
    });
  }

  /**
   * One call, retried as the SDK would: resolves to what `read` makes of the answer, rejects with
   * the error it found (or a transport error) once no attempt is left or it says not to retry.
   */
  async send<T>(request: WireRequest, read: (answer: WireAnswer) => Reading<T>): Promise<T> {
    const bodyHash = sha256(request.body);
    for (let attempt = 1; ; attempt++) {
      let outcome: Reading<T>;
      try {
        const answer = await this.attempt(request, bodyHash, await this.options.credentials());
        outcome = read(answer);
      } catch (error) {
        outcome = { error: transportError(error), retry: true, throttled: false };
      }
      if (outcome.error === undefined) return outcome.value;
      const { error } = outcome;
      error.$metadata = { ...error.$metadata, attempts: attempt };
      if (!outcome.retry || attempt >= this.options.maxAttempts) throw error;
      const base = outcome.throttled ? 500 : 100;
      await sleep(Math.random() * Math.min(20_000, base * 2 ** (attempt - 1)));
    }
  }

  /** Closes the kept-alive connections; calls still in flight fail. */
  destroy(): void {
    this.pool.destroy().catch(() => {});
  }

  /**
   * The `Authorization` header of a request with these headers (lower-case names, sorted, `host`
   * and `x-amz-date` among them) and body hash, signed at `amzDate` (`YYYYMMDDTHHMMSSZ`):
   * Signature Version 4, its canonical path the path as sent (encoded once, as S3 wants; the
   * other services here post to `/`).
   */
  sign(
    credentials: WireCredentials,
    amzDate: string,
    method: string,
    path: string,
    headers: readonly (readonly [string, string])[],
    bodyHash: string,
  ): string {
    const day = amzDate.slice(0, 8);
    const names = headers.map(([name]) => name).join(';');
    let canonical = `${method}\n${path}\n\n`;
    for (const [name, value] of headers) canonical += `${name}:${value.trim()}\n`;
    canonical += `\n${names}\n${bodyHash}`;
    const scope = day + this.scopeTail;
    const toSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha256(canonical)}`;
    const signature = createHmac('sha256', this.keyFor(credentials.secretAccessKey, day))
      .update(toSign)
      .digest('hex');
    return `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${names}, Signature=${signature}`;
  }

  /** The day's signing key, derived once per day and secret. */
  private keyFor(secret: string, day: string): Buffer {
    const cached = this.signingKey;
    if (cached && cached.secret === secret && cached.day === day) return cached.key;
    const kDate = hmac(`AWS4${secret}`, day);
    const kRegion = hmac(kDate, this.target.region);
    const kService = hmac(kRegion, this.target.service);
    const key = hmac(kService, 'aws4_request');
    this.signingKey = { secret, day, key };
    return key;
  }

  /** `amzDateOf` now, worked out once a second. */
  private amzDate(): string {
    const second = Math.floor(this.now() / 1000);
    if (second !== this.dateSecond) {
      this.dateSecond = second;
      this.dateText = amzDateOf(second * 1000);
    }
    return this.dateText;
  }

  private async attempt(
    request: WireRequest,
    bodyHash: string,
    credentials: WireCredentials,
  ): Promise<WireAnswer> {
    const amzDate = this.amzDate();
    const all: Record<string, string> = {
      ...request.headers,
      host: this.host,
      'x-amz-date': amzDate,
    };
    if (request.contentHash) all['x-amz-content-sha256'] = bodyHash;
    if (credentials.sessionToken) all['x-amz-security-token'] = credentials.sessionToken;
    const headers = Object.entries(all).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    all.authorization = this.sign(
      credentials,
      amzDate,
      request.method,
      request.path,
      headers,
      bodyHash,
    );
    const answer = await this.pool.request({
      method: request.method,
      path: request.path,
      headers: all,
      body: request.method === 'GET' ? undefined : request.body,
    });
    const text = await answer.body.text();
    return { status: answer.statusCode, headers: answer.headers as IncomingHttpHeaders, text };
  }
}

/** A service's error in the SDK's shape. */
export function serviceError(
  name: string,
  message: string,
  status: number,
  fields: Record<string, unknown> = {},
): WireError {
  return Object.assign(new Error(message), {
    ...fields,
    name,
    $fault: status >= 500 ? ('server' as const) : ('client' as const),
    $metadata: { httpStatusCode: status },
  }) as WireError;
}

/** Error names (or codes) that mean "slow down": retried after the longer backoff. */
export const THROTTLING = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'Throttling',
  'TooManyRequestsException',
  'SlowDown',
  'RequestThrottled',
]);

/** How an answer that is an error should be retried, as the SDK's standard mode would. */
export function retryOf(
  error: WireError,
  status: number,
): { error: WireError; retry: boolean; throttled: boolean } {
  const throttled = status === 429 || THROTTLING.has(error.name);
  return { error, retry: throttled || status >= 500, throttled };
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

const TRANSIENT_CODES = new Set([
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
]);

/**
 * A failure below HTTP (a refused or dropped connection, an attempt past its time) as the SDK
 * names it: undici's timeouts as `TimeoutError`, a refused or reset connection by its code.
 */
function transportError(error: unknown): WireError {
  const e = error instanceof Error ? error : new Error(String(error));
  const code = String((e as { code?: unknown }).code ?? '');
  const shaped = e as WireError;
  if (TIMEOUT_CODES.has(code)) shaped.name = 'TimeoutError';
  else if (TRANSIENT_CODES.has(code)) shaped.name = code;
  shaped.$fault = 'client';
  shaped.$metadata = {};
  return shaped;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function hmac(key: string | Buffer, text: string): Buffer {
  return createHmac('sha256', key).update(text).digest();
}

/** `YYYYMMDDTHHMMSSZ` of a time in ms since the epoch. */
export function amzDateOf(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** What the SDK client's resolved config holds that a wire uses. */
export interface SdkWireConfig {
  credentials?: unknown;
  systemClockOffset?: unknown;
}

/**
 * The wire's credentials and clock from an SDK client's resolved config, or `undefined` when the
 * client has no credential provider to share.
 */
export function fromSdkConfig(
  client: object,
): Pick<WireOptions, 'credentials' | 'now'> | undefined {
  const config = (client as { config?: SdkWireConfig }).config;
  const credentials = config?.credentials;
  if (typeof credentials !== 'function') return undefined;
  return {
    credentials: credentials as () => Promise<WireCredentials>,
    // The SDK keeps the offset of the endpoint's clock from this host's once it has seen one.
    now: () => Date.now() + (Number(config?.systemClockOffset) || 0),
  };
}

/**
 * Adds a step to an SDK client's middleware stack that records, from each request it is about to
 * send (signed, just before the HTTP handler), the endpoint and the region and signing name of
 * its signature; `onTarget` is called with each one it reads.
 */
export function captureTarget(client: object, onTarget: (target: WireTarget) => void): boolean {
  const stack = (client as { middlewareStack?: { add?: unknown } }).middlewareStack;
  if (typeof stack?.add !== 'function') return false;
  (stack.add as (middleware: unknown, options: object) => void).call(
    stack,
    (next: (args: { request?: unknown }) => Promise<unknown>) => (args: { request?: unknown }) => {
      const target = targetOf(args.request);
      if (target) onTarget(target);
      return next(args);
    },
    { step: 'deserialize', priority: 'low', name: 'leaseholdCaptureTarget' },
  );
  return true;
}

function targetOf(request: unknown): WireTarget | undefined {
  const r = request as {
    protocol?: unknown;
    hostname?: unknown;
    port?: unknown;
    path?: unknown;
    headers?: Record<string, unknown>;
  } | null;
  if (!r || typeof r.hostname !== 'string' || typeof r.path !== 'string') return undefined;
  const scheme = String(r.protocol ?? 'https:');
  if (!/^https?:?$/.test(scheme)) return undefined;
  const protocol = scheme.startsWith('https') ? 'https:' : 'http:';
  const auth = Object.entries(r.headers ?? {}).find(
    ([name]) => name.toLowerCase() === 'authorization',
  )?.[1];
  const scope = /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request,/.exec(
    String(auth ?? ''),
  );
  if (!scope) return undefined;
  const port = typeof r.port === 'number' ? r.port : undefined;
  return {
    protocol,
    hostname: r.hostname,
    port,
    path: r.path,
    region: scope[1]!,
    service: scope[2]!,
  };
}

/** Whether two targets name the same endpoint, path, region and service. */
export function sameTarget(a: WireTarget, b: WireTarget | undefined): boolean {
  return (
    b !== undefined &&
    a.protocol === b.protocol &&
    a.hostname === b.hostname &&
    a.port === b.port &&
    a.path === b.path &&
    a.region === b.region &&
    a.service === b.service
  );
}

/**
 * `byWire`; when the endpoint refuses its signature as one it cannot check (`refused` names those
 * errors; a refused request wrote nothing), the call again by `bySdk`. Any answer from the SDK —
 * a result, or a service error such as a failed condition or a missing key — shows the endpoint
 * takes the SDK's signature where it refused ours, so `drop` takes the wire away for good; so does
 * a failure that is no answer. Only when the SDK's signature is refused too (the credentials are
 * at fault, not the wire) is the wire kept.
 */
export async function byWireElseSdk<T>(
  refused: ReadonlySet<string>,
  byWire: () => Promise<T>,
  bySdk: () => Promise<T>,
  drop: () => void,
): Promise<T> {
  try {
    return await byWire();
  } catch (error) {
    if (!refused.has(errorName(error))) throw error;
  }
  try {
    const answer = await bySdk();
    drop();
    return answer;
  } catch (error) {
    if (!refused.has(errorName(error))) drop();
    throw error;
  }
}

/** The `name` an error carries, or '' for anything else. */
function errorName(error: unknown): string {
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : '';
}
