import { stripUndefined } from '../../core/options.js';
import type { Diagnosis } from '../../core/doctor.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import type { LeaseData } from '../../core/lease-data.js';
import { parseStoreUrl } from '../../core/store-url.js';
import {
  StoreBase,
  type AcquireOutcome,
  type StoreCapabilities,
  type WatchListener,
} from '../../core/store.js';
import type { EtcdClient } from './etcd-driver.js';
import { acquireMany, releaseMany, renewMany } from './etcd-batch.js';
import { connectEtcd } from './etcd-connect.js';
import type { EtcdContext } from './etcd-context.js';
import { DataRevisions } from './etcd-data-revisions.js';
import { diagnoseEtcd } from './etcd-doctor.js';
import { mapEtcdError } from './etcd-errors.js';
import { EtcdKeys } from './etcd-keys.js';
import { recordOf } from './etcd-record.js';
import { byKind, listRecords } from './etcd-list.js';
import { OwnerLeases } from './etcd-leases.js';
import { acquireChain, firstPerTxn, pickFirst } from './etcd-first.js';
import { acquireGroup, groupMaxFor } from './etcd-group.js';
import { EtcdTransitions } from './etcd-transitions.js';
import {
  resolveEtcdOptions,
  type EtcdStoreOptions,
  type ResolvedEtcdOptions,
} from './etcd-options.js';
import { EtcdRpc } from './etcd-rpc.js';
import { parseEtcdUrl, type EtcdTarget } from './etcd-url.js';
import type { Unwatch } from '../../core/store.js';
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
export class EtcdStore extends StoreBase {
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
  private readonly ctx: EtcdContext;
  private readonly transitions: EtcdTransitions;
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
    this.ctx = {
      rpc: this.rpc,
      keys: this.keys,
      leases: new OwnerLeases(this.rpc),
      dataRevisions: new DataRevisions(),
      maxTxnOps: this.options.maxTxnOps,
    };
    this.transitions = new EtcdTransitions(this.ctx);
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

  /**
   * One transaction on the owner's etcd lease (grouped with others while one is on the wire),
   * plus a keep-alive of that lease sent alongside only when needed (see `EtcdTransitions`).
   */
  protected doTryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    return this.transitions.tryAcquire(resource, owner, ttlMs);
  }

  /** One nested transaction per resource, one outer one per 126 (see `acquireMany`). */
  protected override doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return acquireMany(this.ctx, resources, owner, ttlMs);
  }

  /** One transaction whose compares cover every member (see `acquireGroup`). */
  protected override doAcquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    return acquireGroup(this.ctx, resources, owner, ttlMs);
  }

  /**
   * One chained transaction over the first 42 candidates (at `maxTxnOps` 128, see `firstTxn`);
   * beyond them, one `list` page and a chained transaction per 42 that look free (`pickFirst`).
   */
  protected override doAcquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    return pickFirst(
      {
        perTxn: firstPerTxn(this.options.maxTxnOps),
        chain: (chain) => acquireChain(this.ctx, chain, owner, ttlMs),
        list: (prefix, limit) => this.doList(prefix, limit, ''),
        allowanceMs: this.expiryLagMs,
      },
      resources,
    );
  }

  /** One keep-alive per owner and TTL, then one transaction per 125 leases (see `renewMany`). */
  protected doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    return renewMany(this.ctx, leases, ttlMs);
  }

  /** The owner's keep-alive when needed, then one transaction (grouped while one is on the wire). */
  protected override doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    return this.transitions.renew(lease, ttlMs, undefined);
  }

  /** `renew`'s transaction with the data key written in it: still one transaction. */
  protected override doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    return this.transitions.renew(lease, ttlMs, data);
  }

  /** One transaction (grouped with others while one is on the wire). */
  protected override doRelease(lease: LeaseRef): Promise<boolean> {
    return this.transitions.release(lease);
  }

  /** `release`'s transaction with the data key written in it: still one transaction. */
  protected override doReleaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.transitions.release(lease, data);
  }

  /** One transaction with renew's compares that writes the data key alone. */
  protected override doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.transitions.writeData(lease, data);
  }

  /** One transaction per 126 leases, sent concurrently. */
  protected doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return releaseMany(this.ctx, leases);
  }

  /** One range read of the resource's keys. */
  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    const { start, end } = this.keys.resource(resource);
    const { kvs } = await this.rpc.range({ key: start, range_end: end });
    return recordOf(resource, byKind(this.keys, kvs));
  }

  /** Range reads from where the keys after `after` begin, one snapshot (see `listRecords`). */
  protected doList(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    return listRecords(this.rpc, this.keys, prefix, limit, after);
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
