import { loadZookeeperClient } from './zookeeper-driver.js';
import type { Diagnosis } from '../../core/doctor.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease } from '../../core/lease.js';
import { LIMITS, stripUndefined } from '../../core/options.js';
import { parseStoreUrl } from '../../core/store-url.js';
import { DelegatingStore } from '../../core/delegating-store.js';
import type { LeaseStore, StoreCapabilities, Unwatch, WatchListener } from '../../core/store.js';
import { ZkAcquirer } from './zookeeper-acquire.js';
import { CONFIG_ZNODE, diagnoseZookeeper } from './zookeeper-doctor.js';
import type { ZkModule } from './zookeeper-driver.js';
import { mapZookeeperError } from './zookeeper-errors.js';
import { ZkGrants } from './zookeeper-grants.js';
import { GROUP_BYTES, memberBytes, ZkGroups } from './zookeeper-group.js';
import type { Modes } from './zookeeper-ops.js';
import {
  resolveZookeeperOptions,
  type ResolvedZookeeperOptions,
  type ZookeeperStoreOptions,
} from './zookeeper-options.js';
import { ZkPaths } from './zookeeper-paths.js';
import { ZkSessions } from './zookeeper-sessions.js';
import { ZookeeperTransitions } from './zookeeper-transitions.js';
import { ZkUpdates } from './zookeeper-update.js';
import { parseZookeeperUrl, type ZookeeperTarget } from './zookeeper-url.js';
import { ZkWatch } from './zookeeper-watch.js';

/**
 * Leases per piece of a batch (see `StoreBase.batchPiece`). The driver encodes each request and
 * decodes each answer in one synchronous step, with an object per operation: a `renewMany` of
 * 10,000 sent whole held the event loop 100–290 ms here, in pieces of 2,000 (each piece's
 * `multi`s sent one per turn) 10–30 ms.
 */
export const BATCH_LEASES = 2_000;

/**
 * Leases in ZooKeeper (one server or an ensemble) through `node-zookeeper-client`. A lease is an
 * ephemeral hold znode on a session of this store whose timeout is at least the lease's TTL, so
 * the server deletes it when the holder's process dies or is cut off; a persistent record znode
 * keeps the owner and TTL, and a token znode whose version counts the grants gives the fencing
 * token (see zookeeper-paths.ts). Every transition is one atomic `multi`.
 *
 * Expiry is decided on ZooKeeper's clock: `expiresAt` is the leader's `mtime` of the transaction
 * that wrote the record plus the TTL, and a contender finds a lease lapsed by the `mtime` of a
 * write of its own to the clock znode; so a holder that lives on without renewing loses the lease
 * at its TTL even though its session lives on. Acquire is one `multi` when the resource is free.
 * Renew and release are one `multi` conditioned on the hold's existence and on the record's
 * version that this store's own last write of the lease left (see `ZkGrants`: every grant writes
 * the record, so that version also proves no grant came since);
 * a lease this store did not write last has its znodes read first (served by the connected
 * server, no quorum write). `acquireAll` is one `multi` for the whole group when its members are
 * free, and `acquireFirst` one `multi` when its first candidate is (see `ZkGroups`). Batches go
 * in pieces of `BATCH_LEASES`; each piece sends all its reads, if any, together and then one
 * `multi` per 256 KB of operations.
 *
 * Lease data lives in a data znode under the token znode (see zookeeper-paths.ts), written only
 * by `writeData` and renewals or releases carrying data, each one `multi`. A `multi` answers no
 * data, so a grant of a record that has data (its token znode's stat, in the grant's answer,
 * shows the data znode) reads it with one `getData` after the `multi`; a grant of a record
 * without data costs nothing more.
 */
export class ZookeeperStore extends DelegatingStore implements LeaseStore {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'store',
    batch: true,
    watch: true,
    atomicGroupMax: LIMITS.groupMaxSize,
    data: true,
  });
  /**
   * How far the ensemble's server clocks may disagree (the `maxClockSkewMs` option): expiry is
   * judged on `mtime` stamps of the leader, which after a leader change is another server.
   */
  readonly maxClockSkewMs: number;
  protected override readonly batchPiece = BATCH_LEASES;
  private readonly options: ResolvedZookeeperOptions;
  private readonly paths: ZkPaths;
  private readonly sessions: ZkSessions;
  private readonly groups: ZkGroups;
  /** @internal Acquisitions, renewals, releases, data writes and reads, one lease or a batch. */
  protected readonly transitions: ZookeeperTransitions;
  /** @internal The same object: a batch and a single call go by session alike. */
  protected readonly batches: ZookeeperTransitions;
  private readonly watcher: ZkWatch;

  private constructor(
    zk: ZkModule,
    private readonly target: ZookeeperTarget,
    options: ZookeeperStoreOptions,
  ) {
    super();
    this.options = resolveZookeeperOptions(options);
    this.maxClockSkewMs = this.options.maxClockSkewMs;
    this.paths = new ZkPaths(this.options.chroot);
    this.sessions = new ZkSessions(zk, target.hosts, this.options.timeoutMs);
    const modes: Modes = {
      persistent: zk.CreateMode.PERSISTENT,
      ephemeral: zk.CreateMode.EPHEMERAL,
    };
    const grants = new ZkGrants();
    const acquirer = new ZkAcquirer(this.paths.clock, modes, this.maxClockSkewMs, grants);
    this.groups = new ZkGroups(acquirer, this.paths.clock, modes, this.maxClockSkewMs);
    const updates = new ZkUpdates(this.sessions, grants, modes.ephemeral, modes.persistent);
    this.transitions = new ZookeeperTransitions(
      this.sessions,
      this.paths,
      updates,
      acquirer,
      this.groups,
    );
    this.batches = this.transitions;
    this.watcher = new ZkWatch(this.sessions, this.paths, this.options.onWatchError);
  }

  /**
   * Connects to a `zookeeper://` URL; `options` override the URL's parameters. Creates the store
   * path's znodes when missing.
   */
  static async open(url: string, options: ZookeeperStoreOptions = {}): Promise<ZookeeperStore> {
    return ZookeeperStore.connect(parseZookeeperUrl(parseStoreUrl(url)), options);
  }

  /** @internal Opens what a parsed URL names; `options` override the URL's parameters. */
  static async connect(
    target: ZookeeperTarget,
    options: ZookeeperStoreOptions = {},
  ): Promise<ZookeeperStore> {
    const merged = { ...stripUndefined(target.store), ...stripUndefined(options) };
    const resolved = resolveZookeeperOptions(merged); // bad options fail before connecting
    const zk = resolved.driver ?? (await loadZookeeperClient());
    const store = new ZookeeperStore(zk, target, merged);
    try {
      await store.init();
    } catch (error) {
      await store.sessions.close();
      const mapped = mapZookeeperError(error, 'connect');
      throw new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `cannot reach zookeeper at ${target.redacted}: ${mapped.message.replace(/^zookeeper connect failed: /, '')}`,
        { cause: error, retryable: mapped.retryable },
      );
    }
    return store;
  }

  /** The znode under which this store's leases live. */
  get chroot(): string {
    return this.options.chroot;
  }

  /**
   * Each server's mode, membership and fsync count, read with the four-letter words `srvr`,
   * `conf` and `mntr` (the membership from the `/zookeeper/config` znode when `conf` is not
   * allowed); see zookeeper-doctor.ts. Read-only; every read within `timeoutMs`.
   */
  diagnose(): Promise<Diagnosis> {
    return this.guarded('diagnose', () =>
      diagnoseZookeeper({
        hosts: this.target.hosts,
        timeoutMs: this.options.timeoutMs,
        readConfig: async () => {
          const session = await this.sessions.main();
          return (await session.getData(CONFIG_ZNODE))?.data.toString('utf8') ?? null;
        },
      }),
    );
  }

  /**
   * Calls `listener` when a lease under `prefix` is acquired, released, or expires, through any
   * store on this path. The returned function unsubscribes; its `ready` promise settles once the
   * watches are in place.
   */
  watch(prefix: string, listener: WatchListener): Unwatch {
    const checked = this.checkWatch(prefix, listener);
    return this.watcher.add(checked, listener);
  }

  /**
   * One `multi` for the whole group on the session for the TTL (see `ZkGroups.all`); a group
   * whose operations could outgrow one ZooKeeper packet (`GROUP_BYTES`: only names near the length
   * limit that need escaping) is taken member by member in resource order instead.
   */
  protected override async doAcquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    const paths = resources.map((r) => this.paths.of(r));
    const bytes = paths.reduce((sum, p) => sum + memberBytes(p, owner, ttlMs), 0);
    if (bytes > GROUP_BYTES) return super.doAcquireAll(resources, owner, ttlMs);
    const session = await this.sessions.forTtl(ttlMs);
    return this.groups.all(session, paths, owner, ttlMs);
  }

  protected async doClose(): Promise<void> {
    this.watcher.stop();
    // A session whose holds someone may still believe in is left to expire, never ended: ending
    // it would delete those holds at once and let another owner in early.
    await this.sessions.close();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapZookeeperError(error, operation);
  }

  /** Creates the store path's znodes when missing: the records znode and the clock znode. */
  private async init(): Promise<void> {
    const session = await this.sessions.main();
    await Promise.all([session.mkdirp(this.paths.records), session.mkdirp(this.paths.clock)]);
  }
}
