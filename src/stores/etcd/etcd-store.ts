import { stripUndefined } from '../../core/options.js';
import type { Diagnosis } from '../../core/doctor.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import { parseStoreUrl } from '../../core/store-url.js';
import {
  StoreBase,
  type AcquireOutcome,
  type StoreCapabilities,
  type WatchListener,
} from '../../core/store.js';
import type { EtcdClient, EtcdTxnRequest, EtcdTxnResponse } from './etcd-driver.js';
import { connectEtcd } from './etcd-connect.js';
import { diagnoseEtcd } from './etcd-doctor.js';
import { mapEtcdError } from './etcd-errors.js';
import { EtcdKeys, type ResourceKeys } from './etcd-keys.js';
import { recordOf } from './etcd-record.js';
import { byKind, listRecords } from './etcd-list.js';
import { OwnerLeases, type OwnerLease } from './etcd-leases.js';
import { sendNested } from './etcd-batch.js';
import { firstPerTxn, firstTaken, firstTxn, firstWrites, pickFirst } from './etcd-first.js';
import { groupGrants, groupMaxFor, groupTxn } from './etcd-group.js';
import { Coalescer } from './etcd-coalesce.js';
import { grantOf, refusalOf, undoTxn, type Grant } from './etcd-overwrite.js';
import {
  acquiredData,
  acquiredToken,
  acquireTxn,
  blockingHolder,
  releaseTxn,
  releaseWithDataTxn,
  renewTxn,
  renewWithDataTxn,
  writeDataTxn,
} from './etcd-ops.js';
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
  private readonly leases: OwnerLeases;
  private readonly txns: Coalescer;
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
    this.leases = new OwnerLeases(this.rpc);
    this.txns = new Coalescer(this.rpc, this.options.maxTxnOps);
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
   * plus a keep-alive of that lease sent alongside only when it would not outlast the new hold as
   * it stands. If etcd had let that lease lapse (or it was revoked), the call retries once on a
   * fresh one.
   */
  protected async doTryAcquire(
    resource: string,
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const keys = this.keys.cached(resource);
    const { answer, expiresAt, nonce } = await this.leases.attach(
      'tryAcquire',
      owner,
      ttlMs,
      (leaseId, expiresAt, nonce) =>
        this.txns.send(resource, acquireTxn(keys, owner, leaseId, expiresAt, nonce)),
    );
    const token = acquiredToken(answer, keys, owner, nonce);
    if (token === undefined) {
      blockingHolder(answer, keys, resource); // RECORD_INVALID when what stood in the way is not a record
      return null;
    }
    if (answer.succeeded) {
      const grant = grantOf(answer, keys, token);
      const refusal = refusalOf(grant, resource);
      if (refusal) throw await this.undo([grant], owner, refusal);
    }
    return withData({ resource, owner, token, expiresAt, ttlMs }, acquiredData(answer, keys));
  }

  /**
   * The single acquire's transaction for each resource, nested: one outer transaction per 126
   * resources (at `maxTxnOps` 128), sent concurrently, on the owner's etcd lease picked, kept
   * alive when needed and retried once exactly as `tryAcquire` does. Each resource is its own
   * compare-and-set; one that is held answers with the holder's record, read in its
   * transaction's else-branch. A holder's keys that are not a record fail the whole batch with
   * `RECORD_INVALID`, after the leases it granted are given back.
   */
  protected override async doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    const keys = new Array<ResourceKeys>(resources.length);
    let invalid: LeaseError | undefined;
    const undo: Grant[] = [];
    const { answer } = await this.leases.attach(
      'acquireMany',
      owner,
      ttlMs,
      (leaseId, expiresAt, nonce) =>
        sendNested(this.rpc, this.options.maxTxnOps, resources, {
          keyOf: (resource) => resource,
          txnOf: (resource, i) =>
            acquireTxn((keys[i] = this.keys.of(resource)), owner, leaseId, expiresAt, nonce),
          answerOf: (resource, i, response): AcquireOutcome => {
            const token = acquiredToken(response, keys[i]!, owner, nonce);
            if (token !== undefined && response.succeeded) {
              const grant = grantOf(response, keys[i]!, token);
              const refusal = refusalOf(grant, resource);
              if (refusal) {
                invalid ??= refusal;
                undo.push(grant);
                return { resource, lease: null };
              }
            }
            if (token !== undefined) {
              const data = acquiredData(response, keys[i]!);
              return {
                resource,
                lease: withData({ resource, owner, token, expiresAt, ttlMs }, data),
              };
            }
            let holder: LeaseRecord | undefined;
            try {
              holder = blockingHolder(response, keys[i]!, resource);
            } catch (error) {
              if (!(error instanceof LeaseError) || error.code !== ErrorCode.RECORD_INVALID)
                throw error;
              invalid ??= error;
            }
            return holder ? { resource, lease: null, holder } : { resource, lease: null };
          },
        }),
    );
    if (invalid === undefined) return answer;
    // A record that is not one fails the batch, once what it granted meanwhile is given back:
    // grants over such keys undone, the others released.
    if (undo.length > 0) await this.undo(undo, owner, invalid);
    const granted = answer.flatMap((outcome) => (outcome.lease ? [outcome.lease] : []));
    if (granted.length > 0) await this.doReleaseMany(granted);
    throw invalid;
  }

  /**
   * One transaction whose compares cover every member (see `groupTxn`), on the owner's etcd lease
   * picked, kept alive when needed and retried once exactly as `tryAcquire` does.
   */
  protected override async doAcquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    const keys = resources.map((r) => this.keys.of(r));
    const { answer, expiresAt } = await this.leases.attach(
      'acquireAll',
      owner,
      ttlMs,
      async (leaseId, expiresAt, nonce) => {
        const txn = groupTxn(keys, owner, leaseId, expiresAt, nonce);
        const response = await this.rpc.txn(txn);
        const grants = groupGrants(response, keys, owner, nonce);
        // Refused: RECORD_INVALID when a member's keys read back are not a record.
        if (!grants && !response.succeeded)
          resources.forEach((resource, i) => {
            const read = { succeeded: false, responses: response.responses.slice(i, i + 1) };
            blockingHolder(read, keys[i]!, resource);
          });
        // Granted over a member's keys that are not a record: every member is put back.
        if (grants && response.succeeded) {
          const taken = grants.map(({ token }, i) =>
            grantOf(response.responses[i]?.response_txn ?? NO_WRITES, keys[i]!, token),
          );
          const refusal = firstRefusal(taken, resources);
          if (refusal) throw await this.undo(taken, owner, refusal);
        }
        return grants;
      },
    );
    return (
      answer?.map(({ token, data }, i) =>
        withData({ resource: resources[i]!, owner, token, expiresAt, ttlMs }, data),
      ) ?? null
    );
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
        chain: (chain) => this.acquireChain(chain, owner, ttlMs),
        list: (prefix, limit) => this.doList(prefix, limit, ''),
        allowanceMs: this.expiryLagMs,
      },
      resources,
    );
  }

  /**
   * `firstTxn` over `resources` on the owner's etcd lease, as `tryAcquire` picks and keeps it; sent
   * once more without the candidates this owner already holds on that etcd lease, if any.
   */
  private async acquireChain(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const { answer, expiresAt } = await this.leases.attach(
      'acquireFirst',
      owner,
      ttlMs,
      async (leaseId, expiresAt, nonce) => {
        let left = [...resources];
        for (;;) {
          const keys = left.map((r) => this.keys.of(r));
          const txn = firstTxn(keys, owner, leaseId, expiresAt, nonce);
          const response = await this.rpc.txn(txn);
          const taken = firstTaken(response, keys, owner, leaseId, nonce);
          const writes =
            taken && 'index' in taken && firstWrites(response, taken.index, keys.length);
          if (writes) {
            const grant = grantOf(writes, keys[taken.index]!, taken.token);
            const refusal = refusalOf(grant, left[taken.index]!);
            if (refusal) throw await this.undo([grant], owner, refusal);
          }
          if (taken === undefined || 'index' in taken)
            return taken && { ...taken, resource: left[taken.index]! };
          const own = new Set(taken.ownHeld);
          left = left.filter((_, i) => !own.has(i));
          if (left.length === 0 || own.size === 0) return undefined;
        }
      },
    );
    return answer
      ? withData(
          { resource: answer.resource, owner, token: answer.token, expiresAt, ttlMs },
          answer.data,
        )
      : null;
  }

  /**
   * One keep-alive per owner and TTL in the batch, then one transaction per 125 leases (sent
   * concurrently) that checks each lease, moves its hold key onto that owner's current etcd lease
   * and records the new `expiresAt`.
   */
  protected async doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    const since = performance.now();
    const sentAt = Date.now();
    const groups = new Map<string, Group>();
    const groupOf = leases.map((lease) => {
      const ttl = ttlMs ?? lease.ttlMs;
      const key = `${ttl}:${lease.owner}`;
      let group = groups.get(key);
      if (!group) {
        group = {
          owner: lease.owner,
          ttlMs: ttl,
          lease: this.leases.live(lease.owner, ttl, since),
        };
        groups.set(key, group);
      }
      return group;
    });
    const settled = await Promise.allSettled([...groups.values()].map((g) => g.lease));
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const owned = new Map<Group, OwnerLease>();
    for (const group of groups.values()) owned.set(group, await group.lease);
    const leaseOf = (i: number): OwnerLease => owned.get(groupOf[i]!)!;
    let ok: boolean[];
    try {
      ok = await this.perLease(leases, (lease, i) =>
        renewTxn(
          this.keys.of(lease.resource),
          lease,
          leaseOf(i).id,
          sentAt + (ttlMs ?? lease.ttlMs),
        ),
      );
    } catch (error) {
      // Some keys may now sit on these leases with holders that will give up: keep them alive no more.
      for (const [group, lease] of owned) this.leases.drop(group.owner, group.ttlMs, lease);
      throw error;
    }
    // The data key is neither sent nor read: the renewed lease carries the data it came with.
    return leases.map((lease, i) =>
      ok[i]
        ? withData(
            {
              resource: lease.resource,
              owner: lease.owner,
              token: lease.token,
              expiresAt: sentAt + (ttlMs ?? lease.ttlMs),
              ttlMs: ttlMs ?? lease.ttlMs,
            },
            lease.data,
          )
        : null,
    );
  }

  /**
   * The keep-alive of the owner's etcd lease that `renewMany` sends too (none when the lease was
   * granted or kept alive after this call began), then one transaction (grouped with others while
   * one is on the wire).
   */
  protected override doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    return this.renewOne(lease, ttlMs, undefined);
  }

  /** `renew`'s transaction with the data key written in it: still one transaction. */
  protected override doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    return this.renewOne(lease, ttlMs, data);
  }

  private async renewOne(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null | undefined,
  ): Promise<Lease | null> {
    const since = performance.now();
    const sentAt = Date.now();
    const ttl = ttlMs ?? lease.ttlMs;
    const owned = await this.leases.live(lease.owner, ttl, since);
    const expiresAt = sentAt + ttl;
    const keys = this.keys.cached(lease.resource);
    let answer: EtcdTxnResponse;
    try {
      answer = await this.txns.send(
        lease.resource,
        data === undefined
          ? renewTxn(keys, lease, owned.id, expiresAt)
          : renewWithDataTxn(keys, lease, owned.id, expiresAt, data),
      );
    } catch (error) {
      this.leases.drop(lease.owner, ttl, owned); // as in `doRenewMany`
      throw error;
    }
    if (!answer.succeeded) return null;
    const renewed = {
      resource: lease.resource,
      owner: lease.owner,
      token: lease.token,
      expiresAt,
      ttlMs: ttl,
    };
    return data === undefined ? withData(renewed, lease.data) : withData(renewed, data);
  }

  /** One transaction (grouped with others while one is on the wire). */
  protected override async doRelease(lease: LeaseRef): Promise<boolean> {
    return this.releaseOne(releaseTxn(this.keys.cached(lease.resource), lease), lease);
  }

  /** `release`'s transaction with the data key written in it: still one transaction. */
  protected override doReleaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.releaseOne(
      releaseWithDataTxn(this.keys.cached(lease.resource), lease, data),
      lease,
    );
  }

  private async releaseOne(txn: EtcdTxnRequest, lease: LeaseRef): Promise<boolean> {
    try {
      return (await this.txns.send(lease.resource, txn)).succeeded;
    } catch (error) {
      this.leases.dropOwner(lease.owner); // as in `doReleaseMany`
      throw error;
    }
  }

  /**
   * One transaction (grouped with others while one is on the wire) with renew's compares that
   * writes the data key alone: the hold key, its etcd lease, the token and the record stay as
   * they are.
   */
  protected override async doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const txn = writeDataTxn(this.keys.cached(lease.resource), lease, data);
    return (await this.txns.send(lease.resource, txn)).succeeded;
  }

  /** One transaction per 126 leases, sent concurrently. */
  protected async doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    try {
      return await this.perLease(leases, (lease) =>
        releaseTxn(this.keys.of(lease.resource), lease),
      );
    } catch (error) {
      // The holders count these as given up; keys still held must not ride on later keep-alives.
      for (const owner of new Set(leases.map((l) => l.owner))) this.leases.dropOwner(owner);
      throw error;
    }
  }

  /**
   * Puts back the keys of grants that landed on keys that are not a record (see
   * etcd-overwrite.ts), in transactions that keep to `maxTxnOps`; answers `refusal`, to throw. If
   * that fails, the grants stay on the owner's etcd lease, which is then used for nothing new so
   * that it lapses.
   */
  private async undo(
    grants: readonly Grant[],
    owner: string,
    refusal: LeaseError,
  ): Promise<LeaseError> {
    const per = Math.max(1, Math.floor(this.options.maxTxnOps / 2));
    try {
      for (let start = 0; start < grants.length; start += per)
        await this.rpc.txn(undoTxn(grants.slice(start, start + per)));
    } catch {
      this.leases.dropOwner(owner);
    }
    return refusal;
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

  /** One nested transaction per lease (see `sendNested`): whether each one's compares held. */
  private perLease<T extends LeaseRef>(
    leases: readonly T[],
    txnOf: (lease: T, index: number) => EtcdTxnRequest,
  ): Promise<boolean[]> {
    return sendNested(this.rpc, this.options.maxTxnOps, leases, {
      keyOf: (lease) => lease.resource,
      txnOf,
      answerOf: (_, __, answer) => answer.succeeded,
    });
  }

  private async ping(): Promise<void> {
    const { start, end } = this.keys.names('');
    await this.rpc.range({ key: start, range_end: end, limit: 1 });
  }
}

/** The leases of one owner and TTL in a renewal batch, and the etcd lease they will be on. */
interface Group {
  readonly owner: string;
  readonly ttlMs: number;
  readonly lease: Promise<OwnerLease>;
}

/** A group member's missing answer: no writes seen. */
const NO_WRITES: EtcdTxnResponse = Object.freeze({ succeeded: false, responses: [] });

/** The first member's refusal among a group's grants (see `refusalOf`). */
function firstRefusal(
  grants: readonly Grant[],
  resources: readonly string[],
): LeaseError | undefined {
  for (const [i, grant] of grants.entries()) {
    const refusal = refusalOf(grant, resources[i]!);
    if (refusal) return refusal;
  }
  return undefined;
}
