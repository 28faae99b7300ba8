import { invalidArgument, type LeaseError } from '../../core/errors.js';
import { LIMITS, stripUndefined } from '../../core/options.js';
import { parseStoreUrl } from '../../core/store-url.js';
import { DelegatingStore } from '../../core/delegating-store.js';
import type { LeaseStore, StoreCapabilities, Unwatch, WatchListener } from '../../core/store.js';
import { withDeadline, type NodeRedisClient, type RedisClient } from './redis-driver.js';
import { connectRedis } from './redis-connect.js';
import type { Diagnosis } from '../../core/doctor.js';
import { diagnoseRedis } from './redis-doctor.js';
import { RedisBatch } from './redis-batch.js';
import { RedisCalls } from './redis-calls.js';
import { mapRedisError } from './redis-errors.js';
import { RedisKeys } from './redis-keys.js';
import { fromNodeRedis, isNodeRedis } from './redis-node.js';
import {
  resolveRedisOptions,
  type RedisStoreOptions,
  type ResolvedRedisOptions,
} from './redis-options.js';
import { RedisTransitions } from './redis-transitions.js';
import { parseRedisUrl, type RedisTarget } from './redis-url.js';
import { RedisWatch } from './redis-watch.js';

/**
 * Leases in Redis (a single server or a Redis Cluster) through ioredis or node-redis. Every
 * transition is one Lua script that reads the server's `TIME`, so expiry is decided on the
 * store's clock. A single lease is one script call on its own key, straight to the driver, no
 * timer of its own (one timer keeps every call's deadline); transitions asked while a call is on
 * the wire go together in one call per shard (see `Coalescer`). Batches and `list`
 * cost one script call per shard (one in all on a single server, up to 1,000 resources for
 * `acquireMany` or `renewMany` / `releaseMany`), sent without waiting for each other; releases are
 * published so `watch` listeners wake at once. `acquireAll` is one script call on a single server
 * and on a cluster namespace of one shard (members of a group on a sharded cluster sit in other
 * slots: they go one by one, see `StoreBase`); `acquireFirst` is one script call per shard its
 * candidates fall in, one in all for the permits or fair-line slots of one name. Lease data is one
 * more field of the record hash (see redis-ops.ts): written only by its own scripts, read by every
 * grant in the same call.
 */
export class RedisStore extends DelegatingStore implements LeaseStore {
  readonly capabilities: StoreCapabilities;
  /** Redis alone decides expiry, inside the script, so no skew is allowed for. */
  readonly maxClockSkewMs = 0;
  private readonly options: ResolvedRedisOptions;
  private readonly keys: RedisKeys;
  private readonly watcher: RedisWatch;
  private readonly calls: RedisCalls;
  /** @internal */
  protected readonly transitions: RedisTransitions;
  /** @internal */
  protected readonly batches: RedisBatch;
  private readonly client: RedisClient;
  private ownsClient = false;

  /**
   * Connects to a `redis://` / `rediss://` URL with ioredis (the store closes that connection on
   * `close()`), or uses a client you made (which stays yours to close): an ioredis `Redis` or
   * `Cluster`, or a connected node-redis v5 `createClient()` or `createCluster()`. Checks that
   * the key layout of the namespace matches before returning.
   */
  static async open(
    target: string | RedisClient | NodeRedisClient,
    options: RedisStoreOptions = {},
  ): Promise<RedisStore> {
    if (typeof target !== 'string') {
      if (isNodeRedis(target) && !target.isOpen) {
        throw invalidArgument(
          'client',
          'is a node-redis client that is not connected: await client.connect() first',
        );
      }
      const store = new RedisStore(target, options);
      await store.calls.checkLayout().catch((error: unknown) => {
        throw mapRedisError(error, 'open');
      });
      return store;
    }
    return RedisStore.connect(parseRedisUrl(parseStoreUrl(target)), options);
  }

  /** @internal Opens what a parsed URL names; `options` override the URL's parameters. */
  static async connect(target: RedisTarget, options: RedisStoreOptions = {}): Promise<RedisStore> {
    const merged = { ...target.store, ...stripUndefined(options) };
    resolveRedisOptions(merged, target.cluster); // bad options fail before connecting
    const client = await connectRedis(target);
    const store = new RedisStore(client, merged);
    store.ownsClient = true;
    try {
      await store.calls.checkLayout();
    } catch (error) {
      await store.close().catch(() => {}); // the layout error is the one worth reporting
      throw mapRedisError(error, 'open');
    }
    return store;
  }

  /**
   * Uses an ioredis `Redis` or `Cluster`, or a connected node-redis client or cluster (told apart
   * by shape, see `isNodeRedis`); the store never closes it. The layout is checked on first use.
   */
  constructor(driver: RedisClient | NodeRedisClient, options?: RedisStoreOptions) {
    super();
    const client = isNodeRedis(driver) ? fromNodeRedis(driver) : driver;
    this.client = client;
    this.options = resolveRedisOptions(options, client.isCluster === true);
    this.keys = new RedisKeys(this.options.prefix, this.options.shards);
    // One script may touch any keys on a single server; on a cluster, only keys of one slot.
    const oneSlot = client.isCluster !== true || this.options.shards === 1;
    this.capabilities = Object.freeze({
      clock: 'store',
      batch: true,
      watch: true,
      atomicGroupMax: oneSlot ? LIMITS.groupMaxSize : 0,
      data: true,
      // One connection per node, commands applied in the order sent: a release and an acquire
      // of the same record go to its node one after the other.
      ordered: true,
    });
    this.watcher = new RedisWatch(client, this.keys.channel, this.options.onWatchError);
    this.calls = new RedisCalls(client, this.keys, this.options.commandTimeoutMs);
    this.transitions = new RedisTransitions(this.calls, client, this.keys, oneSlot);
    this.batches = new RedisBatch(this.calls, client, this.keys);
  }

  /**
   * What `leasehold doctor` reports: INFO and CONFIG GET on the server (on a Redis Cluster, on
   * every master), read-only, within `commandTimeoutMs`. See redis-doctor.ts.
   */
  diagnose(): Promise<Diagnosis> {
    const ms = this.options.commandTimeoutMs;
    return this.guarded('diagnose', () => withDeadline(diagnoseRedis(this.client), ms, 'diagnose'));
  }

  /** The key prefix of this store's namespace. */
  get prefix(): string {
    return this.keys.prefix;
  }

  /**
   * Calls `listener` with `{ type: 'released', resource }` whenever a lease under `prefix` is
   * released through any store on this namespace. Expiry is not announced (Redis has no event for
   * a timestamp inside a hash passing): waiters still need their own timer or reconcile scan.
   * The returned function unsubscribes; its `ready` promise settles once the subscription is live.
   */
  watch(prefix: string, listener: WatchListener): Unwatch {
    const checked = this.checkWatch(prefix, listener);
    return this.watcher.add(checked, listener);
  }

  protected async doClose(): Promise<void> {
    this.watcher.stop();
    if (!this.ownsClient) return;
    try {
      await withDeadline(this.client.quit(), this.options.commandTimeoutMs, 'close');
    } catch {
      // the server is gone or paused: the connection is dropped below instead
    }
    // Also after a QUIT: it ends the connection to the primary but not those a client opened to
    // Sentinels (its failover detector's), which would reconnect for ever and keep the process up.
    this.client.disconnect();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapRedisError(error, operation);
  }
}
