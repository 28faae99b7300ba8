import { stripUndefined } from '../../core/options.js';
import { withDeadline } from '../../core/deadline.js';
import { ErrorCode, invalidArgument, LeaseError } from '../../core/errors.js';
import { isLive, type Lease, type LeaseRecord, type LeaseRef } from '../../core/lease.js';
import type { LeaseData } from '../../core/lease-data.js';
import { parseStoreUrl } from '../../core/store-url.js';
import {
  StoreBase,
  type AcquireOutcome,
  type StoreCapabilities,
  type WatchListener,
} from '../../core/store.js';
import { runInOrder } from '../../core/run-in-order.js';
import { openBucket } from './nats-bucket.js';
import { connectNats } from './nats-connect.js';
import { loadNats, type NatsConnectionLike, type NatsKv, type NatsModules } from './nats-driver.js';
import { mapNatsError, noAnswer } from './nats-errors.js';
import { listRecords } from './nats-list.js';
import { editPrefix } from './nats-ops.js';
import {
  resolveNatsOptions,
  type NatsStoreOptions,
  type ResolvedNatsOptions,
} from './nats-options.js';
import { parseNatsUrl, type NatsTarget } from './nats-url.js';
import type { Unwatch } from '../../core/store.js';
import { NatsWatch } from './nats-watch.js';
import { isRecordInvalid, NatsTransitions } from './nats-transitions.js';
import { NatsPublisher } from './nats-publish.js';
import { runBatch } from './nats-batch.js';
import type { Diagnosis } from '../../core/doctor.js';
import { diagnoseNats } from './nats-doctor.js';

/** Most candidates an acquireFirst looks at with a read each rather than a list. */
const LOOK_BY_READS_MAX = 16;

/**
 * Leases in a NATS JetStream KV bucket, one key per resource (see nats-keys.ts), written only with
 * conditional puts: a put names the revision it read (`previousSeq`; 0 for a key with none) and
 * the server refuses it with "wrong last sequence" when the key moved on. That refusal is the
 * answer "someone else wrote first", never an error.
 *
 * - **acquire** reads the key, and when the record is absent, released or expired writes
 *   `{owner, token + 1, expiresAt, nonce}` conditioned on the revision read: two requests (one
 *   when refused). A conflict reads again (at most four times).
 * - **renew**, **release** and **writeData** write conditioned on the revision of this store's own
 *   last write of the grant: one request. When that revision is not known or is stale (another handle, or a
 *   write whose answer was lost), the record is read and the write made only if owner and token
 *   are still the lease's: a renew whose first attempt landed although its answer was lost
 *   succeeds when retried. Release keeps the key, its token and its data.
 * - **lease data** (`capabilities.data`) is a member of the value (see nats-record.ts). A value is
 *   written whole, so every renew and release rewrites it, carrying the data of the revision the
 *   write is conditioned on, unchanged (this store remembers it with its last write; it never
 *   comes from the caller); a grant carries the data of the revision it read. So the data rides
 *   in every renewal's request: 4 KiB of data makes each renewal's payload about 4 KiB larger.
 *
 * NATS KV has no clock a conditional write can compare with (and NATS 2.9 no per-key TTL), so
 * expiry is judged on the callers' clocks (`capabilities.clock` is `'local'`): a contender takes
 * a record only when `expiresAt + maxClockSkewMs < now`, and a holder stops believing
 * `maxClockSkewMs` early.
 *
 * Every call has a deadline (`timeoutMs`): a paused or unreachable server gives a retryable
 * `STORE_UNAVAILABLE`, never a hang. A write that timed out may still be applied later (NATS does
 * apply it once a paused server resumes): a timed-out acquire is remembered, and a later
 * `tryAcquire` of the same owner that reads the record back with that acquire's nonce adopts it
 * (renewing it, so its `expiresAt` follows the new call); a timed-out renew is settled by the
 * next renew, which compares owner and token.
 *
 * Writes go out as JetStream publishes on the key's subject with the expected-revision header,
 * answered through one reply subscription (see nats-publish.ts), as `@nats-io/kv`'s `put` would
 * send them but without its per-request timers and stack traces. Batches are one conditional write
 * per lease (`capabilities.batch` is false: JetStream 2.9 has no multi-key write), pipelined on
 * the connection, `concurrency` in flight (see nats-batch.ts); a lease whose last write this store
 * does not know, or whose write was refused, takes the single-lease path above. `list` reads every
 * key under the prefix in one consumer stream and sorts here. `watch` is one KV watch over the
 * bucket (see nats-watch.ts).
 */
export class NatsStore extends StoreBase {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'local',
    batch: false,
    watch: true,
    atomicGroupMax: 0,
    data: true,
  });
  readonly maxClockSkewMs: number;
  private readonly options: ResolvedNatsOptions;
  private readonly records: NatsTransitions;
  private readonly watcher: NatsWatch;
  private ownsConnection = false;

  /**
   * Connects to a `nats://` URL (the store closes that connection on `close()`), or uses a
   * `NatsConnection` you made (from `@nats-io/transport-node`; it stays yours to close). Either
   * way the bucket is opened, created when missing unless `createBucket` is false, and checked.
   * `options` win over the URL's parameters.
   */
  static async open(
    target: string | NatsConnectionLike,
    options: NatsStoreOptions = {},
  ): Promise<NatsStore> {
    if (typeof target === 'string') {
      const url = parseStoreUrl(target);
      if (url.scheme !== 'nats')
        throw new LeaseError(
          ErrorCode.STORE_URL_INVALID,
          `expected a nats:// URL, got ${url.scheme}: URL`, // a token in it may not look like one
        );
      return NatsStore.connect(parseNatsUrl(url), options);
    }
    if (typeof (target as Partial<NatsConnectionLike> | null)?.isClosed !== 'function')
      throw invalidArgument('target', 'must be a nats:// URL or a NatsConnection');
    const resolved = resolveNatsOptions(options);
    return NatsStore.attach(resolved.modules ?? (await loadNats()), target, resolved, false);
  }

  /** @internal Opens what a parsed URL names; `options` override the URL's parameters. */
  static async connect(target: NatsTarget, options: NatsStoreOptions = {}): Promise<NatsStore> {
    const resolved = resolveNatsOptions({
      ...stripUndefined(target.store),
      ...stripUndefined(options),
    });
    const loaded = resolved.modules ?? (await loadNats());
    const nc = await connectNats(loaded, target, resolved.timeoutMs);
    try {
      return await NatsStore.attach(loaded, nc, resolved, true);
    } catch (error) {
      await nc.close().catch(() => {});
      throw error;
    }
  }

  private static async attach(
    modules: NatsModules,
    nc: NatsConnectionLike,
    options: ResolvedNatsOptions,
    owns: boolean,
  ): Promise<NatsStore> {
    const js = modules.jetstream.jetstream(nc, { timeout: options.timeoutMs });
    const kvm = new modules.kv.Kvm(js);
    const ms = options.timeoutMs;
    let kv: NatsKv;
    try {
      kv = await withDeadline(openBucket(kvm, options.bucket, options.createBucket), ms, () =>
        noAnswer('open', options.bucket, ms),
      );
    } catch (error) {
      throw mapNatsError(error, 'open', options.bucket);
    }
    const publisher = new NatsPublisher(nc, modules.transport, editPrefix(kv), options.timeoutMs);
    const store = new NatsStore(nc, kv, publisher, options);
    store.ownsConnection = owns;
    return store;
  }

  private constructor(
    private readonly nc: NatsConnectionLike,
    private readonly kv: NatsKv,
    private readonly publisher: NatsPublisher,
    options: ResolvedNatsOptions,
  ) {
    super();
    this.options = options;
    this.maxClockSkewMs = options.maxClockSkewMs;
    this.records = new NatsTransitions(kv, publisher, options);
    this.watcher = new NatsWatch(kv, {
      bucket: options.bucket,
      timeoutMs: options.timeoutMs,
      maxClockSkewMs: options.maxClockSkewMs,
      clock: options.clock,
      onError: options.onWatchError,
    });
  }

  /** The bucket of this store's namespace. */
  get bucket(): string {
    return this.options.bucket;
  }

  /**
   * What `leasehold doctor` reports: the bucket's stream info (storage, replicas, max age) and
   * the server's version, read-only, within `timeoutMs`. See nats-doctor.ts.
   */
  diagnose(): Promise<Diagnosis> {
    const { bucket } = this.options;
    return this.guarded('diagnose', () =>
      this.bounded('diagnose', () => diagnoseNats(this.kv, this.nc, bucket)),
    );
  }

  /**
   * Calls `listener` when a lease under `prefix` is acquired, released, or expires (its
   * `expiresAt + maxClockSkewMs` passed with no renewal), through any store on this bucket. The
   * returned function unsubscribes; its `ready` promise settles once the KV watch is in place.
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
    return (await this.bounded('tryAcquire', () => this.records.acquire(resource, owner, ttlMs)))
      .lease;
  }

  /**
   * The first candidate tried at once; when it is held and the others are few (a counting
   * lease's permits), they are looked at with one read each, all in flight together, and those
   * that look free tried in order. A `list` is one consumer over the whole prefix, which on a
   * bucket under steady writes runs to its deadline: not a look for a hot path. Longer candidate
   * lists (a fair line's slots) take the default path. Every grant is the compare-and-set.
   */
  protected override async doAcquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    if (resources.length > LOOK_BY_READS_MAX) return super.doAcquireFirst(resources, owner, ttlMs);
    const first = await this.doTryAcquire(resources[0]!, owner, ttlMs);
    if (first || resources.length === 1) return first;
    const rest = resources.slice(1);
    // A failed read is only a look that could not be made: that candidate is tried anyway.
    const seen = await Promise.all(rest.map((r) => this.doGet(r).catch(() => null)));
    const now = this.nowEstimate();
    const allowance = this.maxClockSkewMs + (this.expiryLagMs ?? 0);
    for (const [i, resource] of rest.entries()) {
      const record = seen[i];
      if (record && isLive(record, now, allowance)) continue;
      const lease = await this.doTryAcquire(resource, owner, ttlMs);
      if (lease) return lease;
    }
    return null;
  }

  /**
   * One compare-and-set per resource, `concurrency` in flight. A record leasehold does not write
   * fails the whole batch with `RECORD_INVALID` once every resource has been tried, and the leases
   * granted meanwhile are given back first (the records stay as they were; the others' tokens move).
   */
  protected override async doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    let invalid: unknown;
    const outcomes = await runInOrder(
      resources,
      (resource) => resource,
      this.options.concurrency,
      (resource) =>
        this.bounded('acquireMany', () => this.records.acquire(resource, owner, ttlMs)).catch(
          (error: unknown): AcquireOutcome => {
            if (!isRecordInvalid(error)) throw error;
            invalid ??= error;
            return { resource, lease: null };
          },
        ),
    );
    if (invalid === undefined) return outcomes;
    const granted = outcomes.flatMap((o) => (o.lease ? [o.lease] : []));
    if (granted.length > 0) await this.doReleaseMany(granted);
    throw invalid;
  }

  protected override doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    return this.bounded('renew', () => this.records.renew(lease, ttlMs));
  }

  protected override doRelease(lease: LeaseRef): Promise<boolean> {
    return this.bounded('release', () => this.records.release(lease));
  }

  protected override doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.bounded('writeData', () => this.records.writeData(lease, data));
  }

  protected override doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    return this.bounded('renew', () => this.records.renew(lease, ttlMs, data));
  }

  protected override doReleaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.bounded('release', () => this.records.release(lease, data));
  }

  protected doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    return runBatch(leases, this.options.concurrency, {
      send: (lease, done) => this.records.sendRenew(lease, ttlMs, done),
      full: (lease, startedAt) =>
        this.bounded('renewMany', () => this.records.renew(lease, ttlMs), startedAt),
    });
  }

  protected doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return runBatch(leases, this.options.concurrency, {
      send: (lease, done) => this.records.sendRelease(lease, done),
      full: (lease, startedAt) =>
        this.bounded('releaseMany', () => this.records.release(lease), startedAt),
    });
  }

  /** One read. */
  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    const stored = await this.bounded('get', () => this.records.read(resource));
    return stored.stored?.record ?? null;
  }

  /** One consumer stream of every value under the prefix, sorted here (see `listRecords`). */
  protected doList(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    return listRecords(this.kv, { prefix, limit, after }, this.options);
  }

  protected async doClose(): Promise<void> {
    this.watcher.stop();
    this.publisher.close();
    if (this.ownsConnection) await this.nc.close();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapNatsError(error, operation, this.options.bucket);
  }

  /**
   * One transition of one resource within `timeoutMs`, its reads and retries included, counted
   * from `startedAt` (`performance.now()`) when a batch's one-write attempt came first.
   */
  private bounded<T>(
    operation: string,
    fn: () => Promise<T>,
    startedAt = performance.now(),
  ): Promise<T> {
    const ms = this.options.timeoutMs;
    const left = Math.max(0, startedAt + ms - performance.now());
    return withDeadline(fn(), left, () => noAnswer(operation, this.options.bucket, ms));
  }
}
