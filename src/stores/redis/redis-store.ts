import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord } from '../../core/lease.js';
import { parseStoreUrl } from '../../core/open-store.js';
import {
  StoreBase,
  type AcquireOutcome,
  type StoreCapabilities,
  type WatchListener,
} from '../../core/store.js';
import {
  MAX_ACQUIRE_KEYS,
  MAX_SCRIPT_LEASES,
  runScript,
  withDeadline,
  type RedisClient,
} from './redis-client.js';
import { connectRedis } from './redis-connect.js';
import { mapRedisError } from './redis-errors.js';
import { RedisKeys } from './redis-keys.js';
import { listRange, mergePages } from './redis-list.js';
import {
  resolveRedisOptions,
  type RedisStoreOptions,
  type ResolvedRedisOptions,
} from './redis-options.js';
import { ACQUIRE, ACQUIRE_MANY, LAYOUT, LIST, RELEASE_MANY, RENEW_MANY } from './redis-scripts.js';
import { parseRedisUrl, type RedisTarget } from './redis-url.js';
import { RedisWatch, type Unwatch } from './redis-watch.js';

/**
 * Leases in Redis (a single server or a Redis Cluster) through ioredis. Every transition is one
 * Lua script that reads the server's `TIME`, so expiry is decided on the store's clock. Batches
 * and `list` cost one script call per shard (one in all on a single server, up to 1,000 resources
 * for `acquireMany`, 10,000 leases for `renewMany` / `releaseMany`), all sent at once; releases are
 * published so `watch` listeners wake at once.
 */
export class RedisStore extends StoreBase {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'store',
    batch: true,
    watch: true,
  });
  /** Redis alone decides expiry, inside the script, so no skew is allowed for. */
  readonly maxClockSkewMs = 0;
  private readonly options: ResolvedRedisOptions;
  private readonly keys: RedisKeys;
  private readonly watcher: RedisWatch;
  private layoutChecked: Promise<void> | undefined;
  private ownsClient = false;

  /**
   * Connects to a `redis://` / `rediss://` URL (the store closes that connection on `close()`),
   * or uses an ioredis `Redis` or `Cluster` you made (which stays yours to close). Checks that
   * the key layout of the namespace matches before returning.
   */
  static async open(
    target: string | RedisClient,
    options: RedisStoreOptions = {},
  ): Promise<RedisStore> {
    if (typeof target !== 'string') {
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
    const client = await connectRedis(target, merged.commandTimeoutMs);
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

  /** Uses an ioredis `Redis` or `Cluster`; the store never closes it. The layout is checked on first use. */
  constructor(
    private readonly client: RedisClient,
    options?: RedisStoreOptions,
  ) {
    super();
    this.options = resolveRedisOptions(options, client.isCluster === true);
    this.keys = new RedisKeys(this.options.prefix, this.options.shards);
    this.watcher = new RedisWatch(client, this.keys.channel, this.options.onWatchError);
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

  protected async doTryAcquire(
    resource: string,
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const shard = this.keys.shardOf(resource);
    const reply = (await this.call('tryAcquire', () =>
      runScript(
        this.client,
        ACQUIRE,
        [this.keys.recordPrefix(shard) + resource, this.keys.index(shard)],
        [owner, ttlMs, resource],
      ),
    )) as (number | string)[];
    const token = Number(reply[0]);
    if (token === 0) return null;
    return { resource, owner, token, expiresAt: Number(reply[1]), ttlMs };
  }

  /** One ACQUIRE_MANY call per shard and 1,000 resources; a blocked outcome carries its holder. */
  protected override async doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return this.perShard(
      'acquireMany',
      resources,
      itself,
      MAX_ACQUIRE_KEYS,
      async (group, shard) => {
        const recordPrefix = this.keys.recordPrefix(shard);
        const reply = (await runScript(
          this.client,
          ACQUIRE_MANY,
          [this.keys.index(shard), ...group.map((resource) => recordPrefix + resource)],
          [owner, ttlMs, Buffer.byteLength(recordPrefix)],
        )) as (string | number)[];
        return group.map((resource, k): AcquireOutcome => {
          const holder = String(reply[3 * k]);
          const token = Number(reply[3 * k + 1]);
          const expiresAt = Number(reply[3 * k + 2]);
          if (holder === '')
            return { resource, lease: { resource, owner, token, expiresAt, ttlMs } };
          return { resource, lease: null, holder: { resource, owner: holder, token, expiresAt } };
        });
      },
    );
  }

  protected async doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    const expiries = await this.perShard(
      'renewMany',
      leases,
      resourceOf,
      MAX_SCRIPT_LEASES,
      (group) =>
        runScript(
          this.client,
          RENEW_MANY,
          group.map((l) => this.keys.record(l.resource)),
          group.flatMap((l) => [l.owner, String(l.token), ttlMs ?? l.ttlMs]),
        ) as Promise<unknown[]>,
    );
    return leases.map((lease, i) => {
      const expiresAt = Number(expiries[i]);
      if (expiresAt === 0) return null;
      return { ...pickRecord(lease), expiresAt, ttlMs: ttlMs ?? lease.ttlMs };
    });
  }

  protected async doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    const released = await this.perShard(
      'releaseMany',
      leases,
      resourceOf,
      MAX_SCRIPT_LEASES,
      (group) =>
        runScript(
          this.client,
          RELEASE_MANY,
          group.map((l) => this.keys.record(l.resource)),
          [this.keys.channel, ...group.flatMap((l) => [l.owner, String(l.token), l.resource])],
        ) as Promise<unknown[]>,
    );
    return released.map((r) => Number(r) === 1);
  }

  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    const [owner, token, expiresAt] = await this.call('get', () =>
      this.client.hmget(this.keys.record(resource), 'owner', 'token', 'expiresAt'),
    );
    if (token === null || token === undefined) return null;
    return {
      resource,
      owner: owner ?? '',
      token: Number(token),
      expiresAt: Number(expiresAt ?? 0),
    };
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
    const pages = (replies as string[][]).map((reply) => {
      const page: LeaseRecord[] = [];
      for (let i = 0; i + 3 < reply.length; i += 4) {
        page.push({
          resource: reply[i]!,
          owner: reply[i + 1]!,
          token: Number(reply[i + 2]),
          expiresAt: Number(reply[i + 3]),
        });
      }
      return page;
    });
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

  /** Runs `fn` once the layout is known to match, within the command deadline. */
  private call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    return withDeadline(this.checkLayout().then(fn), this.options.commandTimeoutMs, operation);
  }

  /**
   * Runs `script` once per shard the items fall in (per `maxPerCall` items of a shard), all calls
   * sent at once (pipelined on each node's connection), and puts the per-item answers back in
   * input order. An item listed twice is answered in input order: its shard's calls go out in
   * order on one connection.
   */
  private async perShard<T, R>(
    operation: string,
    items: readonly T[],
    resource: (item: T) => string,
    maxPerCall: number,
    script: (group: T[], shard: number) => Promise<R[]>,
  ): Promise<R[]> {
    const groups = new Map<number, number[]>();
    items.forEach((item, i) => {
      const shard = this.keys.shardOf(resource(item));
      const group = groups.get(shard);
      if (group) group.push(i);
      else groups.set(shard, [i]);
    });
    const calls = [...groups].flatMap(([shard, indexes]) =>
      Array.from({ length: Math.ceil(indexes.length / maxPerCall) }, (_, k) => ({
        shard,
        indexes: indexes.slice(k * maxPerCall, (k + 1) * maxPerCall),
      })),
    );
    const out = new Array<R>(items.length);
    await this.call(operation, () =>
      Promise.all(
        calls.map(async ({ shard, indexes }) => {
          const replies = await script(
            indexes.map((i) => items[i]!),
            shard,
          );
          indexes.forEach((itemIndex, k) => (out[itemIndex] = replies[k]!));
        }),
      ),
    );
    return out;
  }

  /** Refuses a namespace laid out by stores with another shard count (they would not see each other's leases). */
  private checkLayout(): Promise<void> {
    this.layoutChecked ??= (async () => {
      const stored = await withDeadline(
        runScript(this.client, LAYOUT, [this.keys.meta], [this.keys.layout]),
        this.options.commandTimeoutMs,
        'open',
      );
      if (stored !== this.keys.layout) {
        throw new LeaseError(
          ErrorCode.STORE_UNAVAILABLE,
          `Redis key prefix "${this.keys.prefix}" is laid out as "${String(stored)}" but this store uses "${this.keys.layout}": open it with the same shards, or use another prefix`,
          { retryable: false },
        );
      }
    })();
    this.layoutChecked.catch(() => {
      this.layoutChecked = undefined; // a connection failure is retried on the next call
    });
    return this.layoutChecked;
  }
}

/** What a release compares: the lease's resource, owner and token. */
type LeaseRef = Pick<Lease, 'resource' | 'owner' | 'token'>;

const itself = (resource: string): string => resource;
const resourceOf = (lease: LeaseRef): string => lease.resource;

function pickRecord(lease: Lease): LeaseRef {
  return { resource: lease.resource, owner: lease.owner, token: lease.token };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
