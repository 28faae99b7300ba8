import type { LeaseError } from '../../core/errors.js';
import {
  checkUrlOptions,
  intParam,
  takeParams,
  urlError,
  type StoreUrl,
} from '../../core/store-url.js';
import { resolveZookeeperOptions, type ZookeeperStoreOptions } from './zookeeper-options.js';

/** What a `zookeeper://` URL names: the ensemble's servers and the store options. */
export interface ZookeeperTarget {
  /** `host:port` of each server, as the driver's connection string takes them. */
  readonly hosts: readonly string[];
  readonly store: ZookeeperStoreOptions;
  /** The URL as given (it holds no secret), for messages. */
  readonly redacted: string;
}

const PARAMS = ['timeoutMs', 'maxClockSkewMs'];
const DEFAULT_PORT = 2181;

/** `zookeeper://host[:port][,host[:port]…][/chroot]?timeoutMs=&maxClockSkewMs=`. */
export function parseZookeeperUrl(url: StoreUrl): ZookeeperTarget {
  const invalid = (why: string, hint?: string): LeaseError =>
    urlError(url, why, {
      hint:
        hint ?? 'expected a ZooKeeper URL like zookeeper://127.0.0.1:2181,127.0.0.1:2182/leasehold',
    });
  if (url.scheme !== 'zookeeper' || !url.rest.startsWith('//')) {
    throw invalid('no zookeeper:// at the start');
  }
  const rest = url.rest.slice(2);
  const slash = rest.indexOf('/');
  const authority = slash === -1 ? rest : rest.slice(0, slash);
  const path = slash === -1 ? '' : rest.slice(slash).replace(/\/+$/, '');
  if (authority.includes('@')) {
    throw invalid('credentials', 'this store connects without ZooKeeper authentication');
  }
  const hosts = authority.split(',').map((host) => {
    if (host === '') throw invalid('an empty server');
    if (host.includes('[')) {
      throw invalid(
        `the IPv6 server ${JSON.stringify(host)}`,
        'the ZooKeeper driver takes host names and IPv4 addresses',
      );
    }
    const withPort = /^[^:]+:\d+$/.test(host) ? host : `${host}:${DEFAULT_PORT}`;
    if (!/^[A-Za-z0-9.-]+:\d{1,5}$/.test(withPort) || !URL.canParse(`http://${withPort}`)) {
      throw invalid(`bad server ${JSON.stringify(host)}`);
    }
    return withPort;
  });
  let chroot: string | undefined;
  if (path !== '') {
    try {
      chroot = decodeURIComponent(path);
    } catch {
      throw invalid('a path that is not valid percent-encoding');
    }
  }
  const params = takeParams(url, PARAMS);
  const store: ZookeeperStoreOptions = {
    chroot,
    timeoutMs: intParam(url, params, 'timeoutMs'),
    maxClockSkewMs: intParam(url, params, 'maxClockSkewMs'),
  };
  checkUrlOptions(url, () => resolveZookeeperOptions(store));
  return { hosts, store, redacted: url.redacted };
}
