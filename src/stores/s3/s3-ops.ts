import { ErrorCode, LeaseError } from '../../core/errors.js';

/*
 * What the store sends: the input of each S3 request (GET, conditional PUT, DELETE, one page of
 * ListObjectsV2, CreateBucket) and the form of the conditions a PUT carries. The body a PUT
 * carries is the record (s3-record.ts); s3-objects.ts sends the requests.
 */

/** What a conditional PUT may be conditioned on. */
export type PutCondition = { readonly absent: true } | { readonly etag: string };

/** An ETag without its quotes (S3 sends `"…"`; weak `W/` forms never come from a PUT). */
export function bareEtag(etag: unknown): string {
  if (typeof etag !== 'string' || etag === '')
    throw new LeaseError(ErrorCode.STORE_UNAVAILABLE, 'the S3 endpoint answered without an ETag', {
      retryable: false,
    });
  return etag.replace(/^"(.*)"$/, '$1');
}

/**
 * How the endpoint wants the ETag in `If-Match`: `quoted` as HTTP and AWS S3 write it, or `bare`
 * (radosgw refuses the quoted form, even for the current ETag). The start-up probe finds out.
 */
export type EtagForm = 'quoted' | 'bare';

export function ifMatch(etag: string, form: EtagForm): string {
  return form === 'quoted' ? `"${etag}"` : etag;
}

/** A GET of one object (or its DELETE). */
export function objectInput(bucket: string, key: string): { Bucket: string; Key: string } {
  return { Bucket: bucket, Key: key };
}

/** The SDK's input of a PUT of `body` that lands only if `condition` holds. */
export function putInput(
  bucket: string,
  key: string,
  body: string,
  condition: PutCondition,
  form: EtagForm,
): object {
  return {
    Bucket: bucket,
    Key: key,
    Body: body,
    ContentType: 'application/json',
    ...('absent' in condition ? { IfNoneMatch: '*' } : { IfMatch: ifMatch(condition.etag, form) }),
  };
}

/** The same condition as the HTTP headers of a PUT sent by the wire. */
export function putHeaders(condition: PutCondition, form: EtagForm): Record<string, string> {
  return 'absent' in condition
    ? { 'if-none-match': '*' }
    : { 'if-match': ifMatch(condition.etag, form) };
}

/** One page of keys under `prefix`: after `startAfter` on the first page, then by `token`. */
export function listInput(
  bucket: string,
  prefix: string,
  startAfter: string | undefined,
  token: string | undefined,
  maxKeys: number,
): object {
  return {
    Bucket: bucket,
    Prefix: prefix,
    StartAfter: token === undefined ? startAfter : undefined,
    ContinuationToken: token,
    MaxKeys: maxKeys,
  };
}

/** AWS wants the region named for a bucket outside us-east-1; other services take none. */
export function createBucketInput(bucket: string, region: string | undefined): object {
  const located = region !== undefined && region !== 'us-east-1';
  return {
    Bucket: bucket,
    ...(located ? { CreateBucketConfiguration: { LocationConstraint: region } } : {}),
  };
}
