import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease } from '../../core/lease.js';
import { parseStoreUrl } from '../../core/store-url.js';
import { DelegatingStore } from '../../core/delegating-store.js';
import type { LeaseStore, StoreCapabilities, Unwatch, WatchListener } from '../../core/store.js';
import { callDeadline, NatsCalls, type Bounded } from './nats-calls.js';
import { fromUrl, withConnection, type NatsSetup } from './nats-connect.js';
import type { NatsConnectionLike, NatsKv } from './nats-driver.js';
import { mapNatsError } from './nats-errors.js';
import { acquireFirstByReads, LOOK_BY_READS_MAX } from './nats-first.js';
import type { NatsStoreOptions, ResolvedNatsOptions } from './nats-options.js';
import { parseNatsUrl, type NatsTarget } from './nats-url.js';
import { NatsWatch } from './nats-watch.js';
import { NatsTransitions } from './nats-transitions.js';
import type { NatsPublisher } from './nats-publish.js';
import type { Diagnosis } from '../../core/doctor.js';
import { diagnoseNats } from './nats-doctor.js';

/**
 * Leases in a NATS JetStream KV bucket, one key per resource (see nats-keys.ts), written only with
 * conditional puts: a put names the revision it read (`previousSeq`; 0 for a key with none) and
 * the server refuses it with "wrong last sequence" when the key moved on. That refusal is the
 * answer "someone else wrote first", never an error.
 *
 * - **acquire** reads the key, and when the record is absent, released or expired writes
 *   `{owner, token + 1, expiresAt, nonce}` conditioned on the revision read: two requests (one
 *   when refused). A conflict reads again (at most four times). A record this store released
 *   last, or its watch saw released, is granted on that revision without the read: one request.
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
export class NatsStore extends DelegatingStore implements LeaseStore {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'local',
    batch: false,
    watch: true,
    atomicGroupMax: 0,
    data: true,
  });
  readonly maxClockSkewMs: number;
  private readonly options: ResolvedNatsOptions;
  private readonly nc: NatsConnectionLike;
  private readonly kv: NatsKv;
  private readonly publisher: NatsPublisher;
  private readonly ownsConnection: boolean;
  /** @internal The transitions within the call deadline, and the batches. */
  protected readonly transitions: NatsCalls;
  /** @internal The same object. */
  protected readonly batches: NatsCalls;
  private readonly watcher: NatsWatch;
  /** Runs one call within `timeoutMs` (see `callDeadline`). */
  private readonly bounded: Bounded;

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
    return new NatsStore(await withConnection(target, options));
  }

  /** @internal Opens what a parsed URL names; `options` override the URL's parameters. */
  static async connect(target: NatsTarget, options: NatsStoreOptions = {}): Promise<NatsStore> {
    return new NatsStore(await fromUrl(target, options));
  }

  private constructor({ nc, kv, publisher, options, ownsConnection }: NatsSetup) {
    super();
    this.nc = nc;
    this.kv = kv;
    this.publisher = publisher;
    this.options = options;
    this.ownsConnection = ownsConnection;
    this.maxClockSkewMs = options.maxClockSkewMs;
    this.bounded = callDeadline(options.bucket, options.timeoutMs);
    const records = new NatsTransitions(kv, publisher, options);
    this.transitions = new NatsCalls(records, kv, options, this.bounded);
    this.batches = this.transitions;
    this.watcher = new NatsWatch(kv, {
      bucket: options.bucket,
      timeoutMs: options.timeoutMs,
      maxClockSkewMs: options.maxClockSkewMs,
      clock: options.clock,
      onError: options.onWatchError,
      // Releases it sees save the next acquire here its read (see `NatsTransitions.seen`).
      seen: (resource, stored, revision) => records.seen(resource, stored, revision),
      lost: () => records.forgetSeen(),
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

  /**
   * A few candidates (a counting lease's permits) by a read each (see `acquireFirstByReads`).
   * Longer candidate lists (a fair line's slots) take the default path.
   */
  protected override async doAcquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    if (resources.length > LOOK_BY_READS_MAX) return super.doAcquireFirst(resources, owner, ttlMs);
    return acquireFirstByReads(resources, {
      tryAcquire: (resource) => this.doTryAcquire(resource, owner, ttlMs),
      read: (resource) => this.doGet(resource),
      now: () => this.nowEstimate(),
      allowanceMs: this.maxClockSkewMs + (this.expiryLagMs ?? 0),
    });
  }

  protected async doClose(): Promise<void> {
    this.watcher.stop();
    this.publisher.close();
    if (this.ownsConnection) await this.nc.close();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapNatsError(error, operation, this.options.bucket);
  }
}
