import type { LeaseError } from '../../core/errors.js';
import {
  checkUrlOptions,
  intParam,
  takeParams,
  urlError,
  type StoreUrl,
} from '../../core/store-url.js';
import { REDIS_DEFAULTS, resolveRedisOptions, type RedisStoreOptions } from './redis-options.js';

export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

/** What a `redis://` or `rediss://` URL asks for. */
export interface RedisTarget {
  /** The one server, the cluster seeds or the Sentinels (the URL's host first). */
  readonly nodes: readonly RedisNode[];
  readonly cluster: boolean;
  /** The master group the Sentinels in `nodes` watch; `undefined` without Sentinel. */
  readonly sentinel: string | undefined;
  readonly tls: boolean;
  readonly username: string | undefined;
  readonly password: string | undefined;
  readonly db: number;
  readonly connectTimeoutMs: number;
  readonly store: RedisStoreOptions;
  /** The URL without its password, for messages. */
  readonly redacted: string;
}

const PARAMS = [
  'prefix',
  'shards',
  'connectTimeoutMs',
  'commandTimeoutMs',
  'cluster',
  'sentinel',
  'sentinels',
];
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[^\s:,/[\]]+):(\d{1,5})$/;

/**
 * `redis[s]://[user:password@]host[:port][/db]?prefix=&shards=&connectTimeoutMs=&commandTimeoutMs=&cluster=&sentinel=&sentinels=`.
 * `cluster=yes` treats the host as a Redis Cluster seed; `cluster=h2:p2,h3:p3` adds more seeds.
 * `sentinel=NAME` treats the host as a Sentinel (port 26379 by default) that names the primary of
 * master group NAME; `sentinels=h2:p2,h3:p3` adds more Sentinels. The user and password are the
 * data nodes'.
 */
export function parseRedisUrl(url: StoreUrl): RedisTarget {
  const bad = (problem: string): LeaseError => urlError(url, problem);
  if (!url.rest.startsWith('//')) throw bad('expected redis://host:port');
  let parsed: URL;
  try {
    parsed = new URL(`${url.scheme}:${url.rest}`);
  } catch {
    throw bad('malformed host, port or credentials');
  }
  const path = parsed.pathname.replace(/^\//, '');
  if (!/^\d{0,2}$/.test(path)) throw bad(`database "${path}" must be a number`);
  const db = path === '' ? 0 : Number(path);

  const params = takeParams(url, PARAMS);
  const seeds = clusterSeeds(params.cluster, bad);
  if (seeds && db !== 0) throw bad('a Redis Cluster has only database 0');
  const { sentinel } = params;
  if (sentinel !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(sentinel))
    throw bad('sentinel must name the master group the Sentinels watch (sentinel=mymaster)');
  if (sentinel !== undefined && seeds) throw bad('sentinel and cluster cannot both be given');
  if (params.sentinels !== undefined && sentinel === undefined)
    throw bad('sentinels needs sentinel=NAME, the master group they watch');
  const more = params.sentinels === undefined ? [] : hostPorts(params.sentinels, 'Sentinel', bad);
  const host = unbracket(parsed.hostname) || '127.0.0.1';
  const port = parsed.port !== '' ? Number(parsed.port) : sentinel ? 26379 : 6379;
  const store: RedisStoreOptions = {
    prefix: params.prefix,
    shards: intParam(url, params, 'shards'),
    commandTimeoutMs: intParam(url, params, 'commandTimeoutMs'),
  };
  checkUrlOptions(url, () => resolveRedisOptions(store, seeds !== undefined));
  return {
    nodes: [{ host, port }, ...(seeds ?? []), ...more],
    cluster: seeds !== undefined,
    sentinel,
    tls: url.scheme === 'rediss',
    username: decode(parsed.username, bad),
    password: decode(parsed.password, bad),
    db,
    connectTimeoutMs: intParam(url, params, 'connectTimeoutMs') ?? REDIS_DEFAULTS.connectTimeoutMs,
    store,
    redacted: url.redacted,
  };
}

function clusterSeeds(
  value: string | undefined,
  bad: (problem: string) => LeaseError,
): RedisNode[] | undefined {
  if (value === undefined || value === 'no' || value === 'false' || value === '0') return undefined;
  if (value === 'yes' || value === 'true' || value === '1') return [];
  return hostPorts(value, 'cluster seed', bad);
}

/** `h1:p1,h2:p2` as nodes; `what` names an item in a refusal. */
function hostPorts(value: string, what: string, bad: (problem: string) => LeaseError): RedisNode[] {
  return value.split(',').map((item) => {
    const match = HOST_PORT.exec(item.trim());
    if (!match) throw bad(`${what} "${item}" must be host:port`);
    return { host: unbracket(match[1]!), port: Number(match[2]) };
  });
}

/** A percent-encoded user name or password; `undefined` when empty. */
function decode(part: string, bad: (problem: string) => LeaseError): string | undefined {
  if (part === '') return undefined;
  try {
    return decodeURIComponent(part);
  } catch {
    throw bad('the user name or password is not valid percent-encoding');
  }
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
