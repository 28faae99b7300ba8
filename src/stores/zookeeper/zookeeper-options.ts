import { resolveOnWatchError, type WatchErrorHandler } from '../../core/watch-hub.js';
import type { ZkModule } from './zookeeper-driver.js';
import { invalidArgument } from '../../core/errors.js';
import { checkInteger, checkKnownKeys, describe, optionKeys } from '../../core/options.js';
import { refusedInName } from './zookeeper-paths.js';

/** Where an `ZookeeperStore` keeps its znodes, its deadlines and its clock allowance. */
export interface ZookeeperStoreOptions {
  /**
   * The znode under which every lease of this namespace lives (created when missing): an absolute
   * path such as `/leasehold` or `/apps/billing/leases`, at most 256 bytes. Stores on different
   * paths never see each other's leases.
   * @default '/leasehold'
   */
  chroot?: string;
  /**
   * Deadline of every call, in ms, after which it fails with `STORE_UNAVAILABLE` (a paused or
   * unreachable server never makes a call hang); the connection that missed it is dropped so the
   * driver reconnects, to another server of the ensemble when there is one. A write that timed
   * out may still land.
   * @default 5000
   */
  timeoutMs?: number;
  /**
   * How far the wall clocks of the ensemble's servers may disagree, in ms. Expiry is judged on the
   * leader's clock (znode `mtime` stamps); after a leader change the stamps come from another
   * server, so contenders wait this much longer and holders stop this much sooner.
   * @default 0
   */
  maxClockSkewMs?: number;
  /**
   * Called when the watch that serves `watch` fails; it sets itself up again by itself.
   * @default emits a process warning
   */
  onWatchError?: WatchErrorHandler;
  /**
   * The `node-zookeeper-client` module to connect with (`import zookeeper from
   * 'node-zookeeper-client'`), for bundled programs: a bundler cannot see the store load it by
   * name at run time. The store opens its own sessions through it.
   * @default the installed `node-zookeeper-client`, loaded when the store opens
   */
  driver?: ZkModule;
}

export const ZOOKEEPER_DEFAULTS = Object.freeze({
  chroot: '/leasehold',
  timeoutMs: 5000,
  maxClockSkewMs: 0,
});

const ZOOKEEPER_KEYS = optionKeys<ZookeeperStoreOptions>({
  chroot: true,
  timeoutMs: true,
  maxClockSkewMs: true,
  onWatchError: true,
  driver: true,
});

export interface ResolvedZookeeperOptions {
  readonly chroot: string;
  readonly timeoutMs: number;
  readonly maxClockSkewMs: number;
  readonly onWatchError: WatchErrorHandler;
  readonly driver: ZkModule | undefined;
}

export function resolveZookeeperOptions(
  options: ZookeeperStoreOptions = {},
): ResolvedZookeeperOptions {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('ZookeeperStore options', options, ZOOKEEPER_KEYS);
  const onWatchError = resolveOnWatchError(options.onWatchError);
  return {
    chroot: checkChroot(options.chroot ?? ZOOKEEPER_DEFAULTS.chroot),
    timeoutMs: checkInteger(
      'timeoutMs',
      options.timeoutMs ?? ZOOKEEPER_DEFAULTS.timeoutMs,
      1,
      600_000,
    ),
    maxClockSkewMs: checkInteger(
      'maxClockSkewMs',
      options.maxClockSkewMs ?? ZOOKEEPER_DEFAULTS.maxClockSkewMs,
      0,
      60_000,
    ),
    onWatchError,
    driver: checkDriver(options.driver),
  };
}

/** A module with `createClient` and `CreateMode`, as `node-zookeeper-client` exports. */
function checkDriver(value: unknown): ZkModule | undefined {
  if (value === undefined) return undefined;
  const driver = value as Partial<ZkModule> | null;
  if (
    typeof driver !== 'object' ||
    driver === null ||
    typeof driver.createClient !== 'function' ||
    typeof driver.CreateMode !== 'object'
  ) {
    throw invalidArgument(
      'driver',
      `must be the node-zookeeper-client module (with createClient and CreateMode), got ${describe(value)}`,
    );
  }
  return driver as ZkModule;
}

/** An absolute znode path: `/` then names ZooKeeper accepts, none empty, `.` or `..`. */
function checkChroot(value: unknown): string {
  const ok =
    typeof value === 'string' &&
    value.startsWith('/') &&
    value
      .slice(1)
      .split('/')
      .every(
        (name) =>
          name !== '' &&
          name !== '.' &&
          name !== '..' &&
          ![...name].some((char) => refusedInName(char.codePointAt(0)!)),
      ) &&
    Buffer.byteLength(value, 'utf8') <= 256;
  if (!ok) {
    throw invalidArgument(
      'chroot',
      `must be an absolute znode path like /leasehold, at most 256 bytes, got ${describe(value)}`,
    );
  }
  return value;
}
