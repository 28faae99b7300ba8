import type { Diagnosis } from '../../core/doctor.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { parseStoreUrl } from '../../core/store-url.js';
import {
  DelegatingStore,
  type LeaseBatches,
  type LeaseTransitions,
} from '../../core/delegating-store.js';
import { recordBatches, recordTransitions } from '../../core/record-calls.js';
import type { LeaseStore, StoreCapabilities } from '../../core/store.js';
import { captureTarget } from '../aws/aws-wire.js';
import type { S3Client, S3SdkOption } from './s3-driver.js';
import { fromUrl, withClient, type S3Connection } from './s3-connect.js';
import { diagnoseS3 } from './s3-doctor.js';
import { isBucketTaken, mapS3Error } from './s3-errors.js';
import { KeySpace } from './s3-keys.js';
import { listRecords } from './s3-list.js';
import { ObjectIo } from './s3-objects.js';
import type { ResolvedS3Options, S3ConnectOptions, S3StoreOptions } from './s3-options.js';
import type { EtagForm } from './s3-ops.js';
import { probeConditionalWrites } from './s3-probe.js';
import { S3Transitions } from './s3-transitions.js';
import { parseS3Url, type S3Target } from './s3-url.js';

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
export class S3Store extends DelegatingStore implements LeaseStore {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'local',
    batch: false,
    watch: false,
    atomicGroupMax: 0,
    data: true,
  });
  readonly maxClockSkewMs: number;
  private readonly keys: KeySpace;
  /** @internal */
  protected readonly transitions: LeaseTransitions;
  /** @internal */
  protected readonly batches: LeaseBatches;

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
    return S3Store.start(await withClient(target, options));
  }

  /** @internal Opens what a parsed URL names; `options` override its parameters. */
  static async connect(
    target: S3Target,
    options: S3StoreOptions & S3ConnectOptions & S3SdkOption = {},
  ): Promise<S3Store> {
    return S3Store.start(await fromUrl(target, options));
  }

  /** Makes the store, creates the bucket when asked, and runs the conditional-write probe. */
  private static async start(connection: S3Connection): Promise<S3Store> {
    const { client, sdk, options, where, ownsClient, bucketRegion, setup } = connection;
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
    const { concurrency } = options;
    const records = new S3Transitions(
      io,
      this.keys,
      () => options.clock.now(),
      options.maxClockSkewMs,
    );
    const listing = { io, keys: this.keys, transitions: records, concurrency };
    this.transitions = recordTransitions(records);
    // `list` is one ListObjectsV2 per 1000 keys, then one GET per record (see `listRecords`).
    this.batches = recordBatches(records, concurrency, (prefix, limit, after) =>
      listRecords(listing, prefix, limit, after),
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

  protected async doClose(): Promise<void> {
    this.io.close();
    if (this.ownsClient) (this.client as { destroy?: () => void }).destroy?.();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapS3Error(error, operation, this.options.bucket, this.io.where);
  }
}
