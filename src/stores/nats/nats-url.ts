import type { LeaseError } from '../../core/errors.js';
import {
  boolParam,
  checkUrlOptions,
  intParam,
  takeParams,
  urlError,
  type StoreUrl,
} from '../../core/store-url.js';
import { resolveNatsOptions, type NatsStoreOptions } from './nats-options.js';

/** What a `nats://` URL names: the servers, credentials and store options. */
export interface NatsTarget {
  /** `host:port` of each server. */
  readonly servers: readonly string[];
  /** `user:password@`, or a lone `token@`. */
  readonly auth?: { readonly user: string; readonly pass: string } | { readonly token: string };
  readonly store: NatsStoreOptions;
  /** The URL without its password, for messages. */
  readonly redacted: string;
}

const PARAMS = ['bucket', 'maxClockSkewMs', 'timeoutMs', 'createBucket', 'replicas', 'concurrency'];
const DEFAULT_PORT = 4222;

/**
 * `nats://[user:password@|token@]host[:port][,host[:port]…][/]?bucket=&maxClockSkewMs=&timeoutMs=&createBucket=&replicas=&concurrency=`
 * (port 4222 by default). Every value is checked here, before anything connects.
 */
export function parseNatsUrl(given: StoreUrl): NatsTarget {
  const url = { ...given, redacted: hideToken(given.redacted) };
  const invalid = (why: string): LeaseError =>
    urlError(url, why, {
      hint: 'expected a NATS URL like nats://127.0.0.1:4222?bucket=leasehold',
    });
  if (url.scheme !== 'nats' || !url.rest.startsWith('//')) throw invalid('no nats:// at the start');
  let authority = url.rest.slice(2);
  if (authority.endsWith('/')) authority = authority.slice(0, -1);
  if (authority.includes('/')) throw invalid('a path (the bucket goes in ?bucket=)');
  const at = authority.lastIndexOf('@');
  const userinfo = at === -1 ? undefined : authority.slice(0, at);
  const hostList = at === -1 ? authority : authority.slice(at + 1);
  const servers = hostList.split(',').map((host) => {
    if (host === '') throw invalid('an empty server');
    const withPort = /^(\[[^\]]+\]|[^:[\]]+):\d+$/.test(host) ? host : `${host}:${DEFAULT_PORT}`;
    if (!URL.canParse(`nats://${withPort}`)) throw invalid(`bad server ${JSON.stringify(host)}`);
    return withPort;
  });
  let auth: NatsTarget['auth'];
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    try {
      auth =
        colon === -1
          ? { token: decodeURIComponent(userinfo) }
          : {
              user: decodeURIComponent(userinfo.slice(0, colon)),
              pass: decodeURIComponent(userinfo.slice(colon + 1)),
            };
    } catch {
      throw invalid('a user name or password that is not valid percent-encoding');
    }
  }
  const params = takeParams(url, PARAMS);
  const store: NatsStoreOptions = {
    bucket: params.bucket,
    maxClockSkewMs: intParam(url, params, 'maxClockSkewMs'),
    timeoutMs: intParam(url, params, 'timeoutMs'),
    createBucket: boolParam(url, params, 'createBucket'),
    replicas: intParam(url, params, 'replicas'),
    concurrency: intParam(url, params, 'concurrency'),
  };
  checkUrlOptions(url, () => resolveNatsOptions(store));
  return { servers, auth, store, redacted: url.redacted };
}

/**
 * Hides a lone `token@` (NATS token authentication), which the general redaction takes for a user
 * name and leaves: `nats://s3cret@host` becomes `nats://***@host`.
 */
export function hideToken(text: string): string {
  return text.replace(/^(\s*nats:\/\/)[^/?#]*@/i, '$1***@');
}
