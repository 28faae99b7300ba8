import { randomBytes } from 'node:crypto';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { parseStoreUrl } from '../../core/open-store.js';
import { StoreBase, type StoreCapabilities, type WatchListener } from '../../core/store.js';
import type { EtcdClient, EtcdKeyValue, EtcdTxnRequest } from './etcd-client.js';
import { connectEtcd } from './etcd-connect.js';
import { isLeaseNotFound, mapEtcdError } from './etcd-errors.js';
import { EtcdKeys, KIND, recordOf } from './etcd-keys.js';
import { OwnerLeases, type OwnerLease } from './etcd-leases.js';
import { acquiredToken, acquireTxn, releaseTxn, renewTxn } from './etcd-ops.js';
import {
  resolveEtcdOptions,
  type EtcdStoreOptions,
  type ResolvedEtcdOptions,
} from './etcd-options.js';
import { EtcdRpc } from './etcd-rpc.js';
import { parseEtcdUrl, type EtcdTarget } from './etcd-url.js';
import { EtcdWatch, type EtcdUnwatch } from './etcd-watch.js';

/** Keys read per `list` page (each resource has two or three). */
const PAGE_KEYS = 3000;

/**
 * Leases in etcd (one server or a cluster) through etcd3, on etcd's own leases: a resource is held
 * while its hold key exists, and the hold key is attached to an etcd lease of its owner, so etcd
 * itself deletes it when the holder stops renewing — expiry is decided by the etcd leader, never
 * by a client clock. Every transition is one etcd transaction; batches nest one transaction per
 * lease in a single call (per ~125 leases) and renew all of an owner's keys with one keep-alive.
 * An owner's etcd lease is replaced after one TTL (renewals move the keys onto the new one), so a
 * key whose holder stopped renewing lapses even while the same owner renews others.
 *
 * etcd lease TTLs are whole seconds: a TTL is rounded up, and the server raises it to its minimum
 * (1.5 election timeouts rounded up: 2 s by default). `expiresAt` is this machine's estimate of
 * the earliest moment etcd may drop the lease (the time the request was sent plus the granted
 * TTL); etcd has no wall clock, and drops a lapsed lease within about half a second after that.
 */
export class EtcdStore extends StoreBase {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'store',
    batch: true,
    watch: true,
  });
  /** The etcd leader alone decides expiry, so no skew is allowed for. */
  readonly maxClockSkewMs = 0;
  /**
   * The TTL granularity: etcd leases count whole seconds, so a TTL is rounded up to this (and
   * the server may raise it further, to its minimum lease TTL).
   */
  readonly minTtlMs = 1000;
  /**
   * How long after `expiresAt` a lapsed lease may still be held: etcd looks for expired leases
   * every 500 ms, then commits each revocation through raft.
   */
  readonly expiryLagMs = 1000;
  private readonly options: ResolvedEtcdOptions;
  private readonly keys: EtcdKeys;
  private readonly rpc: EtcdRpc;
  private readonly leases: OwnerLeases;
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
    this.keys = new EtcdKeys(this.options.prefix);
    this.rpc = new EtcdRpc(client, this.options.timeoutMs);
    this.leases = new OwnerLeases(this.rpc);
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
   * Calls `listener` when a lease under `prefix` is acquired, released, or expires (etcd revoked
   * its lease), through any store on this namespace. The returned function unsubscribes; its
   * `ready` promise settles once the etcd watch is in place.
   */
  watch(prefix: string, listener: WatchListener): EtcdUnwatch {
    const checked = this.checkWatch(prefix, listener);
    return this.watcher.add(checked, listener);
  }

  /**
   * One transaction, plus a keep-alive of the owner's etcd lease sent alongside it (none when that
   * lease was granted for this call). If etcd had let that lease lapse, the call retries once on
   * a fresh one.
   */
  protected async doTryAcquire(
    resource: string,
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const keys = this.keys.of(resource);
    for (let attempt = 1; ; attempt++) {
      const since = performance.now();
      const sentAt = Date.now();
      const { lease, fresh } = await this.leases.pick(owner, ttlMs, since);
      const nonce = randomBytes(12);
      const expiresAt = sentAt + lease.ttlMs;
      const [txn, alive] = await Promise.allSettled([
        this.rpc.txn(acquireTxn(keys, owner, lease.id, expiresAt, nonce)),
        fresh ? true : this.leases.keepAlive(lease, since),
      ]);
      if (txn.status === 'fulfilled' && alive.status === 'fulfilled' && alive.value) {
        const token = acquiredToken(txn.value, owner, nonce);
        return token === undefined ? null : { resource, owner, token, expiresAt, ttlMs };
      }
      // The hold key may now sit on this lease with no one to renew it: stop keeping it alive.
      this.leases.drop(owner, ttlMs, lease);
      const failure = txn.status === 'rejected' ? txn.reason : undefined;
      const lapsed =
        failure === undefined ? alive.status === 'fulfilled' : isLeaseNotFound(failure);
      if (lapsed && attempt === 1) continue; // etcd revoked the lease, and with it any key just put on it
      throw failure ?? (alive.status === 'rejected' ? alive.reason : lapsedTwice());
    }
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
        group = { owner: lease.owner, ttlMs: ttl, lease: this.liveLease(lease.owner, ttl, since) };
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
        renewTxn(this.keys.of(lease.resource), lease, leaseOf(i).id, sentAt + leaseOf(i).ttlMs),
      );
    } catch (error) {
      // Some keys may now sit on these leases with holders that will give up: keep them alive no more.
      for (const [group, lease] of owned) this.leases.drop(group.owner, group.ttlMs, lease);
      throw error;
    }
    return leases.map((lease, i) =>
      ok[i]
        ? {
            resource: lease.resource,
            owner: lease.owner,
            token: lease.token,
            expiresAt: sentAt + leaseOf(i).ttlMs,
            ttlMs: ttlMs ?? lease.ttlMs,
          }
        : null,
    );
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

  /** One range read of the resource's keys. */
  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    const { start, end } = this.keys.resource(resource);
    const { kvs } = await this.rpc.range({ key: start, range_end: end });
    return recordOf(resource, byKind(this.keys, kvs));
  }

  /** Range reads of up to 3000 keys, all at the revision of the first, so pages are one snapshot. */
  protected async doList(prefix: string, limit: number): Promise<LeaseRecord[]> {
    const { start, end } = this.keys.names(prefix);
    const records: LeaseRecord[] = [];
    let group: { resource: string; kvs: EtcdKeyValue[] } | undefined;
    const flush = (): void => {
      const record = group && recordOf(group.resource, byKind(this.keys, group.kvs));
      if (record) records.push(record);
    };
    let from = start;
    let revision: string | undefined;
    for (;;) {
      const page = Math.min(PAGE_KEYS, 3 * (limit - records.length) + 3);
      const response = await this.rpc.range({ key: from, range_end: end, limit: page, revision });
      revision ??= response.header?.revision;
      for (const kv of response.kvs) {
        const parsed = this.keys.parse(kv.key);
        if (!parsed) continue;
        if (group?.resource !== parsed.resource) {
          flush();
          if (records.length >= limit) return records;
          group = { resource: parsed.resource, kvs: [] };
        }
        group.kvs.push(kv);
      }
      const last = response.kvs.at(-1);
      if (!response.more || !last) break;
      from = Buffer.concat([last.key, Buffer.from([0])]);
    }
    flush();
    return records.slice(0, limit);
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

  /** The owner's etcd lease for `ttlMs`, kept alive after `since` (or granted after it). */
  private async liveLease(owner: string, ttlMs: number, since: number): Promise<OwnerLease> {
    for (;;) {
      const { lease, fresh } = await this.leases.pick(owner, ttlMs, since);
      if (fresh) return lease;
      let alive: boolean;
      try {
        alive = await this.leases.keepAlive(lease, since);
      } catch (error) {
        this.leases.drop(owner, ttlMs, lease);
        throw error;
      }
      if (alive) return lease;
      this.leases.drop(owner, ttlMs, lease); // it lapsed: the next pick grants a fresh one
    }
  }

  /**
   * Runs one nested transaction per lease, up to `maxTxnOps` less what one nested transaction
   * needs (125 renewals or 126 releases) in one outer transaction without compares, so each
   * lease gets its own outcome. etcd refuses two writes to one key in a
   * transaction, so a resource listed twice goes in a later round, after the first settled.
   */
  private async perLease<T extends LeaseRef>(
    leases: readonly T[],
    txnOf: (lease: T, index: number) => EtcdTxnRequest,
  ): Promise<boolean[]> {
    const out = new Array<boolean>(leases.length).fill(false);
    if (leases.length === 0) return out;
    // etcd gives nested transactions what is left of --max-txn-ops after the levels above them.
    const size = Math.max(1, this.options.maxTxnOps - opsNeeded(txnOf(leases[0]!, 0)));
    for (const round of rounds(leases)) {
      const chunks: number[][] = [];
      for (let i = 0; i < round.length; i += size) chunks.push(round.slice(i, i + size));
      await Promise.all(
        chunks.map(async (indexes) => {
          const response = await this.rpc.txn({
            compare: [],
            success: indexes.map((i) => ({ request_txn: txnOf(leases[i]!, i) })),
            failure: [],
          });
          indexes.forEach((leaseIndex, k) => {
            out[leaseIndex] = response.responses[k]?.response_txn?.succeeded === true;
          });
        }),
      );
    }
    return out;
  }

  private async ping(): Promise<void> {
    const { start, end } = this.keys.names('');
    await this.rpc.range({ key: start, range_end: end, limit: 1 });
  }
}

/**
 * The `--max-txn-ops` a transaction needs: etcd counts the longest of its compare, success and
 * failure lists, and lets each nested transaction use only what that leaves.
 */
function opsNeeded(txn: EtcdTxnRequest): number {
  const own = Math.max(txn.compare.length, txn.success.length, txn.failure.length);
  const nested = [...txn.success, ...txn.failure].map((op) =>
    op.request_txn ? opsNeeded(op.request_txn) : 0,
  );
  return own + Math.max(0, ...nested);
}

/** The leases of one owner and TTL in a renewal batch, and the etcd lease they will be on. */
interface Group {
  readonly owner: string;
  readonly ttlMs: number;
  readonly lease: Promise<OwnerLease>;
}

/** Indexes of `leases` in rounds where each resource appears at most once, in input order. */
function rounds(leases: readonly LeaseRef[]): number[][] {
  const seen = new Map<string, number>();
  const out: number[][] = [];
  leases.forEach((lease, i) => {
    const round = seen.get(lease.resource) ?? 0;
    seen.set(lease.resource, round + 1);
    (out[round] ??= []).push(i);
  });
  return out;
}

function byKind(
  keys: EtcdKeys,
  kvs: readonly EtcdKeyValue[],
): { record?: EtcdKeyValue; token?: EtcdKeyValue } {
  const out: { record?: EtcdKeyValue; token?: EtcdKeyValue } = {};
  for (const kv of kvs) {
    const kind = keys.parse(kv.key)?.kind;
    if (kind === KIND.record) out.record = kv;
    else if (kind === KIND.token) out.token = kv;
  }
  return out;
}

function lapsedTwice(): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    'etcd tryAcquire failed: the etcd lease lapsed as it was used, twice',
  );
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
