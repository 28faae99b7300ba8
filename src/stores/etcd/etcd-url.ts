import type { LeaseError } from '../../core/errors.js';
import {
  checkUrlOptions,
  intParam,
  takeParams,
  urlError,
  type StoreUrl,
} from '../../core/store-url.js';
import { resolveEtcdOptions, type EtcdStoreOptions } from './etcd-options.js';

/** What an `etcd://` URL names: the cluster's client endpoints, credentials and store options. */
export interface EtcdTarget {
  /** `http://host:port` of each endpoint. */
  readonly hosts: readonly string[];
  readonly auth?: { readonly username: string; readonly password: string };
  readonly store: EtcdStoreOptions;
  /** The URL without its password, for messages. */
  readonly redacted: string;
}

const PARAMS = ['prefix', 'timeoutMs', 'maxTxnOps'];
const DEFAULT_PORT = 2379;

/** `etcd://[user:password@]host[:port][,host[:port]…][/]?prefix=&timeoutMs=&maxTxnOps=`. */
export function parseEtcdUrl(url: StoreUrl): EtcdTarget {
  const invalid = (why: string): LeaseError =>
    urlError(url, why, {
      hint: 'expected an etcd URL like etcd://127.0.0.1:2379,127.0.0.1:22379?prefix=/leasehold/',
    });
  if (url.scheme !== 'etcd' || !url.rest.startsWith('//')) {
    throw invalid('no etcd:// at the start');
  }
  let authority = url.rest.slice(2);
  if (authority.endsWith('/')) authority = authority.slice(0, -1);
  if (authority.includes('/')) throw invalid('a path (the key prefix goes in ?prefix=)');
  const at = authority.lastIndexOf('@');
  const userinfo = at === -1 ? undefined : authority.slice(0, at);
  const hostList = at === -1 ? authority : authority.slice(at + 1);
  const hosts = hostList.split(',').map((host) => {
    if (host === '') throw invalid('an empty endpoint');
    const withPort = /^(\[[^\]]+\]|[^:[\]]+):\d+$/.test(host) ? host : `${host}:${DEFAULT_PORT}`;
    if (!URL.canParse(`http://${withPort}`)) throw invalid(`bad endpoint ${JSON.stringify(host)}`);
    return `http://${withPort}`;
  });
  let auth: EtcdTarget['auth'];
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    try {
      auth = {
        username: decodeURIComponent(colon === -1 ? userinfo : userinfo.slice(0, colon)),
        password: decodeURIComponent(colon === -1 ? '' : userinfo.slice(colon + 1)),
      };
    } catch {
      throw invalid('a user name or password that is not valid percent-encoding');
    }
  }
  const params = takeParams(url, PARAMS);
  const store: EtcdStoreOptions = {
    prefix: params.prefix,
    timeoutMs: intParam(url, params, 'timeoutMs'),
    maxTxnOps: intParam(url, params, 'maxTxnOps'),
  };
  checkUrlOptions(url, () => resolveEtcdOptions(store));
  return { hosts, auth, store, redacted: url.redacted };
}
