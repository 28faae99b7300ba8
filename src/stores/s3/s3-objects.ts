import { withDeadline } from '../../core/deadline.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { S3Client, S3Command, S3Module } from './s3-driver.js';
import { isNotFound, isPreconditionFailed, isUnclear, SIGNATURE_REFUSED } from './s3-errors.js';
import {
  bareEtag,
  createBucketInput,
  listInput,
  objectInput,
  putHeaders,
  putInput,
  type EtagForm,
  type PutCondition,
} from './s3-ops.js';
import { byWireElseSdk, type Undici, type WireOptions, type WireTarget } from '../aws/aws-wire.js';
import { basePathOf, S3Wire } from './s3-wire.js';

/** What a store that made its own client needs to send GET and PUT by the wire. */
export interface WireSetup {
  readonly undici: Undici;
  readonly shared: Pick<WireOptions, 'credentials' | 'now'>;
  readonly connectTimeoutMs: number;
  readonly attemptTimeoutMs: number;
  readonly maxSockets: number;
}

/** How a conditional PUT ended. */
export type PutResult =
  | { readonly kind: 'written'; readonly etag: string }
  | { readonly kind: 'refused' }
  /** No clear answer (409, 5xx, or a 412 on a retry): read the object back to decide. */
  | { readonly kind: 'unclear'; readonly error: unknown };

/**
 * The S3 requests of the store, each within `requestTimeoutMs`: GET, conditional PUT, DELETE of
 * the probe object, and one page of ListObjectsV2.
 */
export class ObjectIo {
  /** How `If-Match` names an ETag here; set by the probe. */
  etagForm: EtagForm = 'quoted';
  /** GET and PUT go by the wire once one of the SDK's own requests showed where (see `learn`). */
  private wire: S3Wire | undefined;
  /** Set once the store went back to the SDK for good, or closed; or never given a setup. */
  private wireOff: boolean;
  /** The last request the SDK signed, as `captureTarget` read it. */
  private seen: WireTarget | undefined;

  constructor(
    private readonly client: S3Client,
    readonly sdk: S3Module,
    readonly bucket: string,
    private readonly requestTimeoutMs: number,
    private readonly ownsClient: boolean,
    readonly where: string,
    private readonly setup?: WireSetup,
  ) {
    this.wireOff = setup === undefined;
  }

  /** Told of each request the SDK signs (see `captureTarget`). */
  saw(target: WireTarget): void {
    this.seen = target;
  }

  /** Closes the wire's connections; later calls go through the SDK. */
  close(): void {
    this.wireOff = true;
    this.wire?.destroy();
    this.wire = undefined;
  }

  /**
   * After an SDK request for `key` answered: if the request it signed last was that one, its path
   * shows where keys go, and GET and PUT go by the wire from now on.
   */
  private learn(key: string): void {
    const seen = this.seen;
    if (this.wireOff || this.wire || !seen || !this.setup) return;
    const base = basePathOf(seen.path, key);
    if (base === undefined) return;
    const { undici, shared, connectTimeoutMs, attemptTimeoutMs, maxSockets } = this.setup;
    this.wire = new S3Wire(seen, base, {
      ...shared,
      undici,
      connectTimeoutMs,
      attemptTimeoutMs,
      maxSockets,
      maxAttempts: 3,
    });
  }

  /**
   * `byWire` within the deadline where the wire is on, else `bySdk`; a signature the endpoint
   * refuses sends the call again through the SDK, which takes the wire away for good unless the
   * SDK's signature is refused too (`byWireElseSdk`).
   */
  private async either<T>(
    operation: string,
    key: string,
    byWire: (wire: S3Wire) => Promise<T>,
    bySdk: () => Promise<T>,
  ): Promise<T> {
    const wire = this.wire;
    if (wire === undefined) {
      try {
        return await bySdk();
      } finally {
        this.learn(key);
      }
    }
    return byWireElseSdk(
      SIGNATURE_REFUSED,
      () => this.bounded(operation, byWire(wire)),
      bySdk,
      () => {
        if (this.wire === wire) this.close();
      },
    );
  }

  /** The object's body and bare ETag, or `null` when there is none. */
  async get(operation: string, key: string): Promise<{ body: string; etag: string } | null> {
    type Answer = { Body?: { transformToString(): Promise<string> }; ETag?: string };
    try {
      return await this.either(
        operation,
        key,
        async (wire) => {
          const { body, etag } = await wire.get(key);
          return { body, etag: bareEtag(etag) };
        },
        // The body is read under the same deadline as the request: a stalled body is no answer.
        async () =>
          (await this.send(
            operation,
            new this.sdk.GetObjectCommand(objectInput(this.bucket, key)),
            async (answer) => {
              const { Body, ETag } = answer as Answer;
              return { body: (await Body?.transformToString()) ?? '', etag: bareEtag(ETag) };
            },
          )) as { body: string; etag: string },
      );
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  /** A PUT that lands only if the object is absent, or still has the ETag given. */
  async put(
    operation: string,
    key: string,
    body: string,
    condition: PutCondition,
    form: EtagForm = this.etagForm,
  ): Promise<PutResult> {
    const input = putInput(this.bucket, key, body, condition, form);
    const conditions = putHeaders(condition, form);
    try {
      const etag = await this.either(
        operation,
        key,
        (wire) => wire.put(key, body, conditions),
        async () => {
          const answer = (await this.send(operation, new this.sdk.PutObjectCommand(input))) as {
            ETag?: string;
          };
          return answer.ETag ?? '';
        },
      );
      return { kind: 'written', etag: bareEtag(etag) };
    } catch (error) {
      if (isUnclear(error)) return { kind: 'unclear', error };
      if (isPreconditionFailed(error)) return { kind: 'refused' };
      throw error;
    }
  }

  /** A PUT with no condition (the probe's first write only). */
  async putPlain(operation: string, key: string, body: string): Promise<string> {
    const answer = (await this.send(
      operation,
      new this.sdk.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body }),
    )) as { ETag?: string };
    return bareEtag(answer.ETag);
  }

  async delete(operation: string, key: string): Promise<void> {
    await this.send(operation, new this.sdk.DeleteObjectCommand(objectInput(this.bucket, key)));
  }

  /** One page of keys under `prefix`, after `startAfter`, in UTF-8 byte order. */
  async listPage(
    operation: string,
    prefix: string,
    startAfter: string | undefined,
    token: string | undefined,
    maxKeys: number,
  ): Promise<{ keys: string[]; next: string | undefined }> {
    const answer = (await this.send(
      operation,
      new this.sdk.ListObjectsV2Command(listInput(this.bucket, prefix, startAfter, token, maxKeys)),
    )) as {
      Contents?: { Key?: string }[];
      IsTruncated?: boolean;
      NextContinuationToken?: string;
    };
    const keys = (answer.Contents ?? []).flatMap((item) =>
      typeof item.Key === 'string' ? [item.Key] : [],
    );
    return {
      keys,
      next: answer.IsTruncated === true ? answer.NextContinuationToken : undefined,
    };
  }

  /** Creates the bucket, in `region` where the endpoint wants one named (see `createBucketInput`). */
  async createBucket(operation: string, region: string | undefined): Promise<void> {
    await this.send(
      operation,
      new this.sdk.CreateBucketCommand(createBucketInput(this.bucket, region)),
    );
  }

  /**
   * One SDK call within `requestTimeoutMs`, the SDK's retries included: at the deadline it fails
   * with a retryable `STORE_UNAVAILABLE`, even if the SDK would wait on. On a client this store
   * made, the SDK's own attempt timeouts (a third of the deadline each, three attempts) end its
   * call about then too; a client you made keeps its own timeouts, so its calls are aborted at the
   * deadline. Either way a write whose answer did not come may still land.
   */
  send(
    operation: string,
    command: S3Command,
    then: (answer: unknown) => unknown = (answer) => answer,
  ): Promise<unknown> {
    const controller = this.ownsClient ? undefined : new AbortController();
    const call = (
      controller
        ? this.client.send(command, { abortSignal: controller.signal })
        : this.client.send(command)
    ).then(then);
    return this.bounded(operation, call, controller);
  }

  /** `call` within `requestTimeoutMs`, `controller` aborted at the deadline. */
  private bounded<T>(
    operation: string,
    call: Promise<T>,
    controller?: AbortController,
  ): Promise<T> {
    const ms = this.requestTimeoutMs;
    return withDeadline(call, ms, () => {
      controller?.abort();
      return new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `S3 ${operation} in bucket "${this.bucket}"${this.where} failed: no answer within ${ms} ms (is the endpoint paused or unreachable?)`,
      );
    });
  }
}
