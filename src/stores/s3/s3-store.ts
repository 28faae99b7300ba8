import type { Diagnosis } from '../../core/doctor.js';
import { ErrorCode, invalidArgument, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import type { LeaseData } from '../../core/lease-data.js';
import { parseStoreUrl } from '../../core/store-url.js';
import { StoreBase, type AcquireOutcome, type StoreCapabilities } from '../../core/store.js';
import { runInOrder } from '../../core/run-in-order.js';
import { captureTarget, fromSdkConfig, loadUndici } from '../aws/aws-wire.js';
import {
  attemptTimeoutMs,
  createClient,
  sdkOf,
  type S3SdkOption,
  type S3Client,
  type S3Module,
} from './s3-driver.js';
import { diagnoseS3 } from './s3-doctor.js';
import { isBucketTaken, mapS3Error } from './s3-errors.js';
import { KeySpace, KEY_MAX_BYTES } from './s3-keys.js';
import { ObjectIo, type WireSetup } from './s3-objects.js';
import {
  resolveS3Connect,
  resolveS3Options,
  type S3ConnectOptions,
  type S3StoreOptions,
  type ResolvedS3Options,
} from './s3-options.js';
import type { EtagForm } from './s3-ops.js';
import { probeConditionalWrites } from './s3-probe.js';
import { Transitions } from './s3-transitions.js';
import { redactEndpoint } from '../../core/store-url.js';
import { parseS3Url, type S3Target } from './s3-url.js';

/** How many keys one ListObjectsV2 page asks for (S3's own maximum). */
const PAGE = 1000;

/**
 * Leases as objects in an S3 bucket, one object `PREFIX/<encoded resource>` per resource, its
 * body the record (JSON). Every transition is a compare-and-set made of S3's conditional writes:
 * acquire reads the object, then PUTs the next record with `If-Match` on the ETag read
 * (`If-None-Match: *` when there is none); renew and release PUT with `If-Match` on the ETag of a
 * record still at the lease's owner and token. A refused condition is the answer "held by someone
 * else" / "no longer yours", never an error. A refused acquire reports the live record as
 * `holder`; one that lost a race between read and write reads again, to report the winner, or to
 * try again when the write that came first left the record free.
 *
 * S3 has no clock in a condition, so expiry is judged on the callers' clocks
 * (`capabilities.clock` is `'local'`): a contender takes a lease only when
 * `expiresAt + maxClockSkewMs < now`, and a holder stops believing `maxClockSkewMs` early.
 *
 * Objects are never deleted, and no lifecycle rule may expire them: the next acquire of a
 * deleted object would start its fencing token again at 1. A released object keeps its token.
 *
 * On open, a probe proves that the endpoint refuses a create over an existing object
 * (`If-None-Match: *`) and a PUT naming a stale ETag (`If-Match`), else `STORE_UNSAFE`; it also
 * finds whether `If-Match` wants the ETag quoted (AWS S3) or bare (radosgw).
 *
 * Lease data (`capabilities.data`) is a member of the body (see s3-record.ts). A body is written
 * whole, so every renew and release PUTs the data of the record it replaces, unchanged (this
 * store remembers it with its last write, or takes it from the read; never from the caller), and
 * a grant the data of the record it read: 4 KiB of data makes each renewal's PUT about 4 KiB
 * larger. `writeData` and a renew or release carrying data are the same one conditional PUT.
 *
 * Requests per transition: acquire 2 (GET, PUT), or 1 GET when a live lease stands in the way
 * (a PUT that lost a race costs a GET more);
 * renew, release and writeData 1 PUT when this store made the record's last write, else 2 (GET, PUT); an
 * unclear answer (a lost response, a 409, a 5xx) costs one more GET that decides it.
 * `acquireMany` / `renewMany` / `releaseMany` do that per resource, `concurrency` at a time.
 * `list` is one ListObjectsV2 per 1000 keys plus one GET per record returned.
 *
 * On a client the store made from a URL, the GET and conditional PUT of a record go by `S3Wire`
 * (see s3-wire.ts and the `fastPath` option) once the SDK's first request for a key has shown the
 * path keys go under: the same requests, signed here with the SDK client's credentials; a
 * signature the endpoint refuses as malformed sends the call again through the SDK, for good.
 */
export class S3Store extends StoreBase {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'local',
    batch: false,
    watch: false,
    atomicGroupMax: 0,
    data: true,
  });
  readonly maxClockSkewMs: number;
  private readonly keys: KeySpace;
  private readonly transitions: Transitions;

  /**
   * Opens an `s3://[KEY_ID:SECRET@]BUCKET/PREFIX?region=&endpoint=&forcePathStyle=…` URL (the
   * store makes an `S3Client` and destroys it on `close()`), or uses an `S3Client` you made (it
   * stays yours; pass `options.bucket`). Runs the conditional-write probe first, creating the
   * bucket before when `createBucket` is set. `options` win over the URL's parameters.
   */
  static async open(
    target: string | S3Client,
    options: S3StoreOptions & S3ConnectOptions & S3SdkOption = {},
  ): Promise<S3Store> {
    if (typeof target === 'string') {
      const url = parseStoreUrl(target);
      if (url.scheme !== 's3')
        throw new LeaseError(
          ErrorCode.STORE_URL_INVALID,
          `expected an s3://BUCKET/PREFIX URL, got ${url.scheme}: URL`,
        );
      return S3Store.connect(parseS3Url(url), options);
    }
    if (typeof (target as Partial<S3Client> | null)?.send !== 'function')
      throw invalidArgument('target', 'must be an s3:// URL or an S3Client');
    const { region, endpoint, forcePathStyle, connectTimeoutMs, credentials, sdk, ...rest } =
      options;
    if (
      [region, endpoint, forcePathStyle, connectTimeoutMs, credentials].some((v) => v !== undefined)
    )
      throw invalidArgument(
        'options',
        'region, endpoint, forcePathStyle, connectTimeoutMs and credentials belong on your S3Client, not the store',
      );
    const resolved = resolveS3Options(rest);
    return S3Store.start(target, await sdkOf(sdk), resolved, '', false, undefined);
  }

  /** @internal Opens what a parsed URL names; `options` override its parameters. */
  static async connect(
    target: S3Target,
    options: S3StoreOptions & S3ConnectOptions & S3SdkOption = {},
  ): Promise<S3Store> {
    const defined = Object.fromEntries(
      Object.entries(options).filter(([, v]) => v !== undefined),
    ) as S3StoreOptions & S3ConnectOptions & S3SdkOption;
    const { sdk: given, ...merged } = { ...target.store, ...target.connect, ...defined };
    const { region, endpoint, forcePathStyle, connectTimeoutMs, credentials, ...store } = merged;
    const resolved = resolveS3Options(store);
    const connect = resolveS3Connect({
      region,
      endpoint,
      forcePathStyle,
      connectTimeoutMs,
      credentials,
    });
    const sdk = await sdkOf(given);
    const client = createClient(sdk, connect, resolved.requestTimeoutMs);
    const shared = resolved.fastPath ? fromSdkConfig(client) : undefined;
    const setup: WireSetup | undefined = shared && {
      undici: await loadUndici(),
      shared,
      connectTimeoutMs: connect.connectTimeoutMs,
      attemptTimeoutMs: attemptTimeoutMs(resolved.requestTimeoutMs),
      maxSockets: resolved.concurrency,
    };
    const where = connect.endpoint
      ? ` at ${redactEndpoint(connect.endpoint)}`
      : connect.region
        ? ` in ${connect.region}`
        : '';
    return S3Store.start(
      client,
      sdk,
      resolved,
      where,
      true,
      connect.endpoint ? undefined : connect.region,
      setup,
    );
  }

  private static async start(
    client: S3Client,
    sdk: S3Module,
    options: ResolvedS3Options,
    where: string,
    ownsClient: boolean,
    bucketRegion: string | undefined,
    setup?: WireSetup,
  ): Promise<S3Store> {
    const io = new ObjectIo(
      client,
      sdk,
      options.bucket,
      options.requestTimeoutMs,
      ownsClient,
      where,
      setup,
    );
    // Before the probe: its first request for a key shows the path keys go under (see `learn`).
    if (setup) captureTarget(client, (target) => io.saw(target));
    const store = new S3Store(client, io, options, ownsClient);
    try {
      if (options.createBucket) {
        await io.createBucket('createBucket', bucketRegion).catch((error: unknown) => {
          if (!isBucketTaken(error)) throw error;
        });
      }
      io.etagForm = await probeConditionalWrites(io, store.keys);
    } catch (error) {
      await store.close().catch(() => {});
      throw store.mapError(error, 'open');
    }
    return store;
  }

  private constructor(
    private readonly client: S3Client,
    private readonly io: ObjectIo,
    private readonly options: ResolvedS3Options,
    private readonly ownsClient: boolean,
  ) {
    super();
    this.maxClockSkewMs = options.maxClockSkewMs;
    this.keys = new KeySpace(options.bucket, options.prefix);
    this.transitions = new Transitions(
      io,
      this.keys,
      () => options.clock.now(),
      options.maxClockSkewMs,
    );
  }

  /** The bucket holding this store's leases. */
  get bucket(): string {
    return this.options.bucket;
  }

  /** The key prefix of this store's objects (`''` or ending in `/`). */
  get prefix(): string {
    return this.options.prefix;
  }

  /** How the endpoint wants an ETag in `If-Match`, as the probe found: `'quoted'` or `'bare'`. */
  get ifMatchForm(): EtagForm {
    return this.io.etagForm;
  }

  /**
   * The bucket's replication and expiration rules that cover the lease objects, and its
   * versioning, each read within `requestTimeoutMs`; the conditional-write probe passed at open.
   * See s3-doctor.ts. Read-only.
   */
  diagnose(): Promise<Diagnosis> {
    return this.guarded('diagnose', () =>
      diagnoseS3({
        io: this.io,
        sdk: this.io.sdk,
        keyPrefix: this.keys.listPrefix(''),
        etagForm: this.io.etagForm,
      }),
    );
  }

  protected async doTryAcquire(
    resource: string,
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    return (await this.transitions.acquire(resource, owner, ttlMs, 'tryAcquire')).lease;
  }

  protected override doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return runInOrder(
      resources,
      (resource) => resource,
      this.options.concurrency,
      (resource) => this.transitions.acquire(resource, owner, ttlMs, 'acquireMany'),
    );
  }

  protected override doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    return this.transitions.renew(lease, ttlMs);
  }

  protected override doRelease(lease: LeaseRef): Promise<boolean> {
    return this.transitions.release(lease);
  }

  protected override doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.transitions.writeData(lease, data);
  }

  protected override doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    return this.transitions.renew(lease, ttlMs, data);
  }

  protected override doReleaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.transitions.release(lease, data);
  }

  protected doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    return runInOrder(
      leases,
      (lease) => lease.resource,
      this.options.concurrency,
      (lease) => this.transitions.renew(lease, ttlMs),
    );
  }

  protected doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return runInOrder(
      leases,
      (lease) => lease.resource,
      this.options.concurrency,
      (lease) => this.transitions.release(lease),
    );
  }

  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    return (await this.transitions.read('get', resource))?.record ?? null;
  }

  /**
   * Lists the keys under the prefix in S3's order (UTF-8 bytes, which is the resources' code-point
   * order by the key encoding), starting after `after`, then reads each record:
   * `ceil(n / 1000)` ListObjectsV2 requests and `n` GETs for `n` records, the GETs `concurrency`
   * at a time. Keys that are not lease records (a probe object left by a crash) are skipped.
   */
  protected async doList(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    const listPrefix = this.keys.listPrefix(prefix);
    if (Buffer.byteLength(listPrefix) > KEY_MAX_BYTES) return [];
    const startAfter = after === '' ? undefined : this.keys.listPrefix(after);
    const resources: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.io.listPage(
        'list',
        listPrefix,
        startAfter,
        token,
        Math.min(PAGE, limit - resources.length + 1),
      );
      for (const key of page.keys) {
        const resource = this.keys.resourceOf(key);
        if (resource !== undefined && resources.length < limit) resources.push(resource);
      }
      token = page.next;
    } while (token !== undefined && resources.length < limit);
    const records = await runInOrder(
      resources,
      (resource) => resource,
      this.options.concurrency,
      (resource) => this.transitions.read('list', resource),
    );
    return records.flatMap((found) => (found ? [found.record] : []));
  }

  protected async doClose(): Promise<void> {
    this.io.close();
    if (this.ownsClient) (this.client as { destroy?: () => void }).destroy?.();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapS3Error(error, operation, this.options.bucket, this.io.where);
  }
}
