import { stripUndefined } from '../../core/options.js';
import type { Diagnosis } from '../../core/doctor.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { parseStoreUrl } from '../../core/store-url.js';
import { DelegatingStore, type LeaseBatches } from '../../core/delegating-store.js';
import type { LeaseStore, StoreCapabilities, Unwatch, WatchListener } from '../../core/store.js';
import type { EtcdClient } from './etcd-driver.js';
import { acquireMany, releaseMany, renewMany } from './etcd-batch.js';
import { connectEtcd } from './etcd-connect.js';
import type { EtcdContext } from './etcd-context.js';
import { DataRevisions } from './etcd-data-revisions.js';
import { diagnoseEtcd } from './etcd-doctor.js';
import { mapEtcdError } from './etcd-errors.js';
import { EtcdKeys } from './etcd-keys.js';
import { listRecords } from './etcd-list.js';
import { OwnerLeases } from './etcd-leases.js';
import { groupMaxFor } from './etcd-group.js';
import { EtcdTransitions } from './etcd-transitions.js';
import {
  resolveEtcdOptions,
  type EtcdStoreOptions,
  type ResolvedEtcdOptions,
} from './etcd-options.js';
import { EtcdRpc } from './etcd-rpc.js';
import { parseEtcdUrl, type EtcdTarget } from './etcd-url.js';
import { EtcdWatch } from './etcd-watch.js';

/**
 * Leases in etcd (one server or a cluster) through etcd3, on etcd's own leases: a resource is held
 * while its hold key is attached to an etcd lease of its owner, so etcd itself deletes it when the
 * holder stops renewing — expiry is decided by the etcd leader, never by a client clock. Every
 * transition is one etcd transaction, and so is an `acquireAll` of up to `maxTxnOps / 2`
 * members and an `acquireFirst` over up to 42 candidates; batches (`acquireMany`, `renewMany`,
 * `releaseMany`) nest one transaction per resource in a single call (per ~125 resources) and keep
 * all of an owner's keys alive with one keep-alive. Single-lease transitions asked while another is on the wire go
 * together in the next turn, each nested as it would be sent alone (see `Coalescer`).
 * An owner's etcd lease is replaced after one TTL (renewals move the keys onto the new one), so a
 * key whose holder stopped renewing lapses even while the same owner renews others.
 *
 * Keeping the owner's etcd lease alive is the renewals' work (one keep-alive per owner and TTL
 * in each `renew` / `renewMany`), not each acquire's: an acquire is its transaction alone while
 * the owner's lease, as last granted or kept alive, outlasts what the new holder will believe
 * (see `covers` in etcd-leases.ts), and sends a keep-alive alongside only when it does not.
 *
 * etcd lease TTLs are whole seconds: an owner lease is granted the TTL plus at least half a
 * second, rounded up (`ownerLeaseSeconds`), and the server raises that to its minimum (1.5
 * election timeouts rounded up: 2 s by default). `expiresAt` is the time the request was sent
 * plus the TTL asked for, on this machine's clock (etcd has none): etcd keeps the hold key at
 * least that long, and drops an unrenewed one within `expiryLagMs` after it.
 */
export class EtcdStore extends DelegatingStore implements LeaseStore {
  /** `atomicGroupMax`: as many members as one transaction holds (64 at `maxTxnOps` 128). */
  readonly capabilities: StoreCapabilities;
  /** The etcd leader alone decides expiry, so no skew is allowed for. */
  readonly maxClockSkewMs = 0;
  /**
   * The TTL granularity: etcd leases count whole seconds, so a TTL is rounded up to this (and
   * the server may raise it further, to its minimum lease TTL).
   */
  readonly minTtlMs = 1000;
  /**
   * How long after `expiresAt` a lapsed lease may still be held: the owner lease's headroom and
   * rounding to whole seconds (under 1.5 s), then etcd looks for expired leases every 500 ms and
   * commits each revocation through raft. (Longer when the owner kept the shared etcd lease alive
   * for other leases after this one's last renewal, up to its rotation.)
   */
  override readonly expiryLagMs = 2000;
  private readonly options: ResolvedEtcdOptions;
  private readonly keys: EtcdKeys;
  private readonly rpc: EtcdRpc;
  /** @internal */
  protected readonly transitions: EtcdTransitions;
  /** @internal */
  protected readonly batches: LeaseBatches;
  private readonly watcher: EtcdWatch;
  private ownsClient = false;

  /**
   * Connects to an `etcd://` URL (the store closes that client on `close()`), or uses an `Etcd3`
   * client you made (which stays yours to close). Either way one read checks that etcd answers.
   */
  static async open(
    target: string | EtcdClient,
    options: EtcdStoreOptions = {},
  ): Promise<EtcdStore> {
    if (typeof target !== 'string') {
      const store = new EtcdStore(target, options);
      await store.ping().catch((error: unknown) => {
        throw mapEtcdError(error, 'open');
      });
      return store;
    }
    return EtcdStore.connect(parseEtcdUrl(parseStoreUrl(target)), options);
  }

  /** @internal Opens what a parsed URL names; `options` override the URL's parameters. */
  static async connect(target: EtcdTarget, options: EtcdStoreOptions = {}): Promise<EtcdStore> {
    const merged = { ...stripUndefined(target.store), ...stripUndefined(options) };
    resolveEtcdOptions(merged); // bad options fail before connecting
    const client = await connectEtcd(target);
    const store = new EtcdStore(client, merged);
    store.ownsClient = true;
    try {
      await store.ping();
    } catch (error) {
      client.close();
      const mapped = mapEtcdError(error, 'connect');
      throw new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `cannot reach etcd at ${target.redacted}: ${mapped.message.replace(/^etcd connect failed: /, '')}`,
        { cause: error, retryable: mapped.retryable },
      );
    }
    return store;
  }

  /** Uses an etcd3 `Etcd3` client; the store never closes it. */
  constructor(
    private readonly client: EtcdClient,
    options?: EtcdStoreOptions,
  ) {
    super();
    this.options = resolveEtcdOptions(options);
    this.capabilities = Object.freeze({
      clock: 'store',
      batch: true,
      watch: true,
      atomicGroupMax: groupMaxFor(this.options.maxTxnOps),
      data: true,
    });
    this.keys = new EtcdKeys(this.options.prefix);
    this.rpc = new EtcdRpc(client, this.options.timeoutMs);
    const ctx: EtcdContext = {
      rpc: this.rpc,
      keys: this.keys,
      leases: new OwnerLeases(this.rpc),
      dataRevisions: new DataRevisions(),
      maxTxnOps: this.options.maxTxnOps,
    };
    this.transitions = new EtcdTransitions(ctx, this.expiryLagMs);
    // Each batch nests one transaction per resource in one call per ~125 (see etcd-batch.ts);
    // `list` reads ranges from where the keys after `after` begin, on one snapshot.
    this.batches = {
      acquireMany: (resources, owner, ttlMs) => acquireMany(ctx, resources, owner, ttlMs),
      renewMany: (leases, ttlMs) => renewMany(ctx, leases, ttlMs),
      releaseMany: (leases) => releaseMany(ctx, leases),
      list: (prefix, limit, after) => listRecords(ctx.rpc, ctx.keys, prefix, limit, after),
    };
    this.watcher = new EtcdWatch(
      client,
      this.keys,
      this.options.timeoutMs,
      this.options.onWatchError,
    );
  }

  /** The key prefix of this store's namespace. */
  get prefix(): string {
    return this.options.prefix;
  }

  /**
   * The cluster's voting members, as one `MemberList` reports them (see etcd-doctor.ts): one
   * member, or an even count, is a warning. Read-only; `STORE_UNAVAILABLE` without an answer
   * within `timeoutMs`.
   */
  diagnose(): Promise<Diagnosis> {
    return this.guarded('diagnose', () => diagnoseEtcd(this.client, this.options.timeoutMs));
  }

  /**
   * Calls `listener` when a lease under `prefix` is acquired, released, or expires (etcd revoked
   * its lease), through any store on this namespace. The returned function unsubscribes; its
   * `ready` promise settles once the etcd watch is in place.
   */
  watch(prefix: string, listener: WatchListener): Unwatch {
    const checked = this.checkWatch(prefix, listener);
    return this.watcher.add(checked, listener);
  }

  protected async doClose(): Promise<void> {
    this.watcher.stop();
    // Leases stay as they are: holders keep believing until their own deadlines, so revoking
    // them here would let another owner in too early. Unrenewed, they lapse at their TTL.
    if (this.ownsClient) this.client.close();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapEtcdError(error, operation);
  }

  private async ping(): Promise<void> {
    const { start, end } = this.keys.names('');
    await this.rpc.range({ key: start, range_end: end, limit: 1 });
  }
}
