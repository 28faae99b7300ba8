import { withDeadline } from '../../core/deadline.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { S3Client, S3Command, S3Module } from './s3-driver.js';
import { isNotFound, isPreconditionFailed, isUnclear } from './s3-errors.js';
import { bareEtag, ifMatch, type EtagForm } from './s3-ops.js';

/** What a conditional PUT may be conditioned on. */
export type PutCondition = { readonly absent: true } | { readonly etag: string };

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

  constructor(
    private readonly client: S3Client,
    private readonly sdk: S3Module,
    readonly bucket: string,
    private readonly requestTimeoutMs: number,
    private readonly ownsClient: boolean,
    readonly where: string,
  ) {}

  /** The object's body and bare ETag, or `null` when there is none. */
  async get(operation: string, key: string): Promise<{ body: string; etag: string } | null> {
    type Answer = { Body?: { transformToString(): Promise<string> }; ETag?: string };
    try {
      // The body is read under the same deadline as the request: a stalled body is no answer.
      return (await this.send(
        operation,
        new this.sdk.GetObjectCommand({ Bucket: this.bucket, Key: key }),
        async (answer) => {
          const { Body, ETag } = answer as Answer;
          return { body: (await Body?.transformToString()) ?? '', etag: bareEtag(ETag) };
        },
      )) as { body: string; etag: string };
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
    const input = {
      Bucket: this.bucket,
      Key: key,
      Body: body,
      ContentType: 'application/json',
      ...('absent' in condition
        ? { IfNoneMatch: '*' }
        : { IfMatch: ifMatch(condition.etag, form) }),
    };
    try {
      const answer = (await this.send(operation, new this.sdk.PutObjectCommand(input))) as {
        ETag?: string;
      };
      return { kind: 'written', etag: bareEtag(answer.ETag) };
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
    await this.send(operation, new this.sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
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
      new this.sdk.ListObjectsV2Command({
        Bucket: this.bucket,
        Prefix: prefix,
        StartAfter: token === undefined ? startAfter : undefined,
        ContinuationToken: token,
        MaxKeys: maxKeys,
      }),
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

  /** AWS wants the region named for a bucket outside us-east-1; other services take none. */
  async createBucket(operation: string, region: string | undefined): Promise<void> {
    const located = region !== undefined && region !== 'us-east-1';
    await this.send(
      operation,
      new this.sdk.CreateBucketCommand({
        Bucket: this.bucket,
        ...(located ? { CreateBucketConfiguration: { LocationConstraint: region } } : {}),
      }),
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
    const ms = this.requestTimeoutMs;
    const controller = this.ownsClient ? undefined : new AbortController();
    const call = (
      controller
        ? this.client.send(command, { abortSignal: controller.signal })
        : this.client.send(command)
    ).then(then);
    return withDeadline(call, ms, () => {
      controller?.abort();
      return new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `S3 ${operation} in bucket "${this.bucket}"${this.where} failed: no answer within ${ms} ms (is the endpoint paused or unreachable?)`,
      );
    });
  }
}
