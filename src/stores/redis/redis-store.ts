import { ErrorCode, invalidArgument, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord } from '../../core/lease.js';
import type { LeaseData } from '../../core/lease-data.js';
import { LIMITS, stripUndefined } from '../../core/options.js';
import { parseStoreUrl } from '../../core/store-url.js';
import {
  StoreBase,
  type AcquireOutcome,
  type StoreCapabilities,
  type WatchListener,
} from '../../core/store.js';
import {
  driverBounds,
  MAX_ACQUIRE_KEYS,
  MAX_SCRIPT_LEASES,
  noAnswer,
  runScript,
  sendScript,
  withDeadline,
  type NodeRedisClient,
  type RedisArg,
  type RedisClient,
} from './redis-driver.js';
import { connectRedis } from './redis-connect.js';
import type { Diagnosis } from '../../core/doctor.js';
import { diagnoseRedis } from './redis-doctor.js';
import { Coalescer } from './redis-coalesce.js';
import { CallDeadlines } from '../../core/call-deadlines.js';
import { isWrongType, mapRedisError } from './redis-errors.js';
import { RedisKeys } from './redis-keys.js';
import { listRange, mergePages } from './redis-list.js';
import { fromNodeRedis, isNodeRedis } from './redis-node.js';
import {
  resolveRedisOptions,
  type RedisStoreOptions,
  type ResolvedRedisOptions,
} from './redis-options.js';
import {
  ACQUIRE,
  ACQUIRE_ALL,
  ACQUIRE_FIRST,
  ACQUIRE_MANY,
  LAYOUT,
  LIST,
  RELEASE,
  RELEASE_DATA,
  RELEASE_MANY,
  RENEW,
  RENEW_DATA,
  RENEW_MANY,
  WRITE_DATA,
  type Script,
} from './redis-ops.js';
import {
  acquired,
  acquiredAll,
  acquiredFirst,
  acquiredMany,
  listed,
  notAHash,
  redisRecord,
  renewed,
  storedData,
} from './redis-record.js';
import { perShard } from './redis-shards.js';
import { parseRedisUrl, type RedisTarget } from './redis-url.js';
import type { Unwatch } from '../../core/store.js';
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
export class RedisStore extends StoreBase {
  readonly capabilities: StoreCapabilities;
  /** Redis alone decides expiry, inside the script, so no skew is allowed for. */
  readonly maxClockSkewMs = 0;
  private readonly options: ResolvedRedisOptions;
  private readonly keys: RedisKeys;
  /** Whether one script can reach every record of the namespace (see the constructor). */
  private readonly oneSlot: boolean;
  private readonly watcher: RedisWatch;
  private layoutChecked: Promise<void> | undefined;
  /** The layout matched: calls go out at once. */
  private layoutReady = false;
  private readonly deadlines: CallDeadlines;
  private readonly coalescer: Coalescer;
  /** Script calls of this store on the wire now (single-lease ones and coalesced ones). */
  private onWire = 0;
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
      await store.checkLayout().catch((error: unknown) => {
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
      await store.checkLayout();
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
    this.oneSlot = client.isCluster !== true || this.options.shards === 1;
    this.capabilities = Object.freeze({
      clock: 'store',
      batch: true,
      watch: true,
      atomicGroupMax: this.oneSlot ? LIMITS.groupMaxSize : 0,
      data: true,
      // One connection per node, commands applied in the order sent: a release and an acquire
      // of the same record go to its node one after the other.
      ordered: true,
    });
    this.watcher = new RedisWatch(client, this.keys.channel, this.options.onWatchError);
    const ms = this.options.commandTimeoutMs;
    this.deadlines = new CallDeadlines(ms, (operation) => noAnswer(operation, ms));
    this.coalescer = new Coalescer(client, this.keys, (delta) => (this.onWire += delta));
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

  protected doTryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    if (!this.layoutReady)
      return this.afterLayout('tryAcquire', () => this.doTryAcquire(resource, owner, ttlMs));
    const reply = (value: unknown): Lease | null => acquired(value, resource, owner, ttlMs);
    if (this.coalescing())
      return this.together('tryAcquire', 'acquire', resource, owner, ttlMs, reply);
    const shard = this.keys.shardOf(resource);
    return this.send(
      'tryAcquire',
      ACQUIRE,
      [this.keys.recordPrefix(shard) + resource, this.keys.index(shard)],
      [owner, ttlMs, resource],
      reply,
    );
  }

  protected override doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    if (!this.layoutReady) return this.afterLayout('renew', () => this.doRenew(lease, ttlMs));
    const ttl = ttlMs ?? lease.ttlMs;
    const { resource, owner, token } = lease;
    return this.send(
      'renew',
      RENEW,
      [this.keys.record(resource)],
      [owner, String(token), ttl],
      (reply) => renewed(reply, lease, ttl),
    );
  }

  protected override doRelease(lease: LeaseRef): Promise<boolean> {
    if (!this.layoutReady) return this.afterLayout('release', () => this.doRelease(lease));
    const { resource, owner, token } = lease;
    if (this.coalescing())
      return this.together('release', 'release', resource, owner, String(token), isReleased);
    return this.send(
      'release',
      RELEASE,
      [this.keys.record(resource)],
      [owner, String(token), this.keys.channel, resource],
      isReleased,
    );
  }

  /** One ACQUIRE_MANY call per shard and 1,000 resources; a blocked outcome carries its holder. */
  protected override async doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return this.batch('acquireMany', resources, itself, MAX_ACQUIRE_KEYS, async (group, shard) => {
      const recordPrefix = this.keys.recordPrefix(shard);
      const reply = (await runScript(
        this.client,
        ACQUIRE_MANY,
        [this.keys.index(shard), ...group.map((resource) => recordPrefix + resource)],
        [owner, ttlMs, Buffer.byteLength(recordPrefix)],
      )) as (string | number)[];
      return acquiredMany(reply, group, owner, ttlMs);
    });
  }

  /**
   * One ACQUIRE_ALL call over every member (called only where one script reaches them all, see
   * `capabilities.atomicGroupMax`): the leases in input order, or `null` with nothing written.
   */
  protected override doAcquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    if (!this.layoutReady)
      return this.afterLayout('acquireAll', () => this.doAcquireAll(resources, owner, ttlMs));
    return this.send(
      'acquireAll',
      ACQUIRE_ALL,
      this.recordsAndIndexes(resources),
      [owner, ttlMs, ...resources],
      (value) => acquiredAll(value, resources, owner, ttlMs),
    );
  }

  /**
   * One ACQUIRE_FIRST call over the candidates where one script reaches them all (a single server,
   * one shard, or candidates of one name's family); on a sharded cluster otherwise, one call per
   * shard the candidates fall in, shards in the order of their first candidate, until one grants.
   */
  protected override async doAcquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    if (!this.layoutReady)
      return this.afterLayout('acquireFirst', () => this.doAcquireFirst(resources, owner, ttlMs));
    const groups = this.oneSlot ? [resources] : this.byShard(resources);
    // The coalesced call keys every record on the first candidate's shard: only when all are there.
    const shard = this.keys.shardOf(resources[0]!);
    if (this.coalescing() && resources.every((r) => this.keys.shardOf(r) === shard)) {
      // With the other single-lease transitions asked meanwhile: one TRANSITIONS call.
      return this.together(
        'acquireFirst',
        'first',
        resources[0]!,
        owner,
        ttlMs,
        (value) => acquiredFirst(value, resources, owner, ttlMs),
        resources,
      );
    }
    for (const group of groups) {
      const lease = await this.send(
        'acquireFirst',
        ACQUIRE_FIRST,
        this.recordsAndIndexes(group),
        [owner, ttlMs, ...group],
        (value) => acquiredFirst(value, group, owner, ttlMs),
      );
      if (lease) return lease;
    }
    return null;
  }

  protected override doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    if (!this.layoutReady)
      return this.afterLayout('writeData', () => this.doWriteData(lease, data));
    const { resource, owner, token } = lease;
    return this.send(
      'writeData',
      WRITE_DATA,
      [this.keys.record(resource)],
      [owner, String(token), storedData(data)],
      isReleased,
    );
  }

  protected override doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    if (!this.layoutReady)
      return this.afterLayout('renew', () => this.doRenewWithData(lease, ttlMs, data));
    const ttl = ttlMs ?? lease.ttlMs;
    const { resource, owner, token } = lease;
    return this.send(
      'renew',
      RENEW_DATA,
      [this.keys.record(resource)],
      [owner, String(token), ttl, storedData(data)],
      (reply) => renewed(reply, lease, ttl, data),
    );
  }

  protected override doReleaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    if (!this.layoutReady)
      return this.afterLayout('release', () => this.doReleaseWithData(lease, data));
    const { resource, owner, token } = lease;
    return this.send(
      'release',
      RELEASE_DATA,
      [this.keys.record(resource)],
      [owner, String(token), this.keys.channel, resource, storedData(data)],
      isReleased,
    );
  }

  protected async doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    // Each call's leases are answered as its reply arrives, so no step handles the whole batch.
    return this.batch('renewMany', leases, resourceOf, MAX_SCRIPT_LEASES, (group) =>
      runScript(
        this.client,
        RENEW_MANY,
        group.map((l) => this.keys.record(l.resource)),
        group.flatMap((l) => [l.owner, String(l.token), ttlMs ?? l.ttlMs]),
        (reply) =>
          group.map((lease, k) => renewed((reply as unknown[])[k], lease, ttlMs ?? lease.ttlMs)),
      ),
    );
  }

  protected async doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return this.batch('releaseMany', leases, resourceOf, MAX_SCRIPT_LEASES, (group) =>
      runScript(
        this.client,
        RELEASE_MANY,
        group.map((l) => this.keys.record(l.resource)),
        [this.keys.channel, ...group.flatMap((l) => [l.owner, String(l.token), l.resource])],
        (reply) => (reply as unknown[]).map(isReleased),
      ),
    );
  }

  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    const [owner, token, expiresAt, data] = await this.call('get', () =>
      this.client
        .hmget(this.keys.record(resource), 'owner', 'token', 'expiresAt', 'data')
        .catch((error: unknown) => {
          if (!isWrongType(error)) throw error;
          throw notAHash(resource, error);
        }),
    );
    return redisRecord(resource, owner, token, expiresAt, data);
  }

  /**
   * One script per shard reads up to `limit` names past `after` in byte order with their records;
   * the shards' pages are merged in order here and cut to `limit`.
   */
  protected async doList(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    const range = listRange(prefix, after);
    if (range === undefined) return [];
    const { min, max } = range;
    const shards = Array.from({ length: this.keys.shards }, (_, shard) => shard);
    const replies = await this.call('list', () =>
      Promise.all(
        shards.map((shard) =>
          runScript(
            this.client,
            LIST,
            [this.keys.index(shard)],
            [min, max, limit, this.keys.recordPrefix(shard)],
          ),
        ),
      ),
    );
    const pages = (replies as (string | null)[][]).map(listed);
    return pages.length === 1 ? pages[0]! : mergePages(pages, limit);
  }

  protected async doClose(): Promise<void> {
    this.watcher.stop();
    if (!this.ownsClient) return;
    try {
      await withDeadline(this.client.quit(), this.options.commandTimeoutMs, 'close');
    } catch {
      this.client.disconnect(); // the server is gone or paused: drop the connection instead
    }
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapRedisError(error, operation);
  }

  /**
   * Runs `fn` once the layout is known to match, within the command deadline: the driver's own
   * where it bounds every command as tightly, else one kept by `deadlines` (one timer for all calls).
   */
  private call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    const ms = this.options.commandTimeoutMs;
    if (!this.layoutReady) return withDeadline(this.checkLayout().then(fn), ms, operation);
    if (driverBounds(this.client, ms)) return fn();
    return this.deadlines.bound<T>(operation, (resolve, reject) => {
      fn().then(resolve, reject);
    });
  }

  /** One script call, its reply turned into the result by `reply`, with as few promises as it takes. */
  private send<T>(
    operation: string,
    script: Script,
    keys: string[],
    args: RedisArg[],
    reply: (value: unknown) => T,
  ): Promise<T> {
    const { client } = this;
    if (!this.layoutReady || driverBounds(client, this.options.commandTimeoutMs)) {
      return this.call(operation, () => runScript(client, script, keys, args, reply));
    }
    return this.deadlines.bound<T>(operation, (resolve, reject) => {
      const answer = replying(reply, resolve, reject);
      this.onWire++;
      sendScript(
        client,
        script,
        keys,
        args,
        (value) => {
          this.onWire--;
          answer(value);
        },
        (error) => {
          this.onWire--;
          reject(error);
        },
      );
    });
  }

  /**
   * Whether a single-lease transition should wait for the next turn and go with the others asked
   * meanwhile (see `Coalescer`): only while another script call of this store is on the wire, and
   * only where the store keeps the deadlines itself.
   */
  private coalescing(): boolean {
    return (
      this.onWire > 0 &&
      this.layoutReady &&
      !driverBounds(this.client, this.options.commandTimeoutMs)
    );
  }

  /** A transition sent with the others asked in this turn, within the command deadline. */
  private together<T>(
    operation: string,
    kind: 'acquire' | 'release' | 'first',
    resource: string,
    owner: string,
    detail: RedisArg,
    reply: (value: unknown) => T,
    candidates?: readonly string[],
  ): Promise<T> {
    return this.deadlines.bound<T>(operation, (resolve, reject) => {
      const onReply = replying(reply, resolve, reject);
      this.coalescer.push({ kind, resource, candidates, owner, detail }, onReply, reject);
    });
  }

  /** The record keys of `resources`, then the index key of each one's shard, in the same order. */
  private recordsAndIndexes(resources: readonly string[]): string[] {
    const keys = new Array<string>(2 * resources.length);
    resources.forEach((resource, i) => {
      const shard = this.keys.shardOf(resource);
      keys[i] = this.keys.recordPrefix(shard) + resource;
      keys[resources.length + i] = this.keys.index(shard);
    });
    return keys;
  }

  /** `resources` split by shard, each in input order, the shards in the order of their first resource. */
  private byShard(resources: readonly string[]): string[][] {
    const groups = new Map<number, string[]>();
    for (const resource of resources) {
      const shard = this.keys.shardOf(resource);
      const group = groups.get(shard);
      if (group) group.push(resource);
      else groups.set(shard, [resource]);
    }
    return [...groups.values()];
  }

  /** `fn` once the namespace's layout is known (key placement depends on it), the check within the command deadline. */
  private afterLayout<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    return withDeadline(this.checkLayout(), this.options.commandTimeoutMs, operation).then(fn);
  }

  /** `perShard` within one command deadline. */
  private batch<T, R>(
    operation: string,
    items: readonly T[],
    resource: (item: T) => string,
    maxPerCall: number,
    script: (group: readonly T[], shard: number) => Promise<R[]>,
  ): Promise<R[]> {
    return this.call(operation, () => perShard(this.keys, items, resource, maxPerCall, script));
  }

  /** Refuses a namespace laid out by stores with another shard count (they would not see each other's leases). */
  private checkLayout(): Promise<void> {
    this.layoutChecked ??= (async () => {
      const stored = await withDeadline(
        runScript(this.client, LAYOUT, [this.keys.meta], [this.keys.layout]),
        this.options.commandTimeoutMs,
        'open',
      );
      if (this.keys.adopt(stored)) {
        this.layoutReady = true;
        return;
      }
      throw new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `Redis key prefix "${this.keys.prefix}" is laid out as "${String(stored)}" but this store uses "${this.keys.layout}": open it with the same shards, or use another prefix`,
        { retryable: false },
      );
    })();
    this.layoutChecked.catch(() => {
      this.layoutChecked = undefined; // a connection failure is retried on the next call
    });
    return this.layoutChecked;
  }
}

/** What a release compares: the lease's resource, owner and token. */
type LeaseRef = Pick<Lease, 'resource' | 'owner' | 'token'>;

/** Settles a call with its reply turned into the result, or with the error turning it threw. */
function replying<T>(
  reply: (value: unknown) => T,
  resolve: (value: T) => void,
  reject: (error: unknown) => void,
): (value: unknown) => void {
  return (value) => {
    try {
      resolve(reply(value));
    } catch (error) {
      reject(error);
    }
  };
}

const itself = (resource: string): string => resource;
const isReleased = (reply: unknown): boolean => Number(reply) === 1;
const resourceOf = (lease: LeaseRef): string => lease.resource;
