import { ErrorCode, LeaseError } from '../../core/errors.js';
import { missingRegion, wasRetried } from '../aws/aws-errors.js';

const PERMISSIONS =
  'the credentials need s3:GetObject, s3:PutObject, s3:DeleteObject and s3:ListBucket on the bucket and prefix';

/** Errors that repeating the call cannot fix, with what to do about them. */
const PERMANENT: Readonly<Record<string, string>> = {
  AccessDenied: PERMISSIONS,
  Forbidden: PERMISSIONS,
  InvalidAccessKeyId: 'the access key is not known to this endpoint',
  SignatureDoesNotMatch: 'the secret key does not match the access key',
  ExpiredToken: 'the session token expired: refresh the credentials',
  CredentialsProviderError:
    'no AWS credentials found: put KEY_ID:SECRET@ in the store URL, set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run with a role',
  InvalidBucketName: 'the bucket name is not valid here',
  PermanentRedirect: 'the bucket is in another region: set ?region=',
  AuthorizationHeaderMalformed: 'the region does not match the bucket: set ?region=',
  NotImplemented: 'the endpoint does not implement this request',
};

const TRANSIENT: Readonly<Record<string, string>> = {
  SlowDown: 'throttled',
  ServiceUnavailable: 'the endpoint is unavailable',
  InternalError: 'the endpoint had an internal error',
  RequestTimeout: 'the endpoint timed out the request',
  TimeoutError: 'no answer in time (is the endpoint paused or unreachable?)',
};

interface SdkError {
  name?: unknown;
  Code?: unknown;
  message?: unknown;
  $fault?: unknown;
  $metadata?: { httpStatusCode?: number };
}

const asSdk = (error: unknown): SdkError =>
  (typeof error === 'object' && error !== null ? error : {}) as SdkError;

export const statusOf = (error: unknown): number | undefined =>
  asSdk(error).$metadata?.httpStatusCode;

const nameOf = (error: unknown): string => {
  const e = asSdk(error);
  return typeof e.name === 'string' ? e.name : typeof e.Code === 'string' ? e.Code : '';
};

/**
 * Turns anything the SDK throws into a `LeaseError`, once, at the store boundary. Throttling,
 * server faults (5xx), timeouts and network failures are retryable; a missing bucket, bad keys,
 * missing permissions and refused requests are not. A refused condition (412, 409) never reaches
 * here: the store answers it with `null` / `false`.
 */
export function mapS3Error(
  error: unknown,
  operation: string,
  bucket: string,
  where: string,
): LeaseError {
  if (error instanceof LeaseError) return error;
  const e = asSdk(error);
  const name = nameOf(error);
  const message = error instanceof Error ? error.message : String(error);
  const prefix = `S3 ${operation} in bucket "${bucket}"${where} failed`;
  if (name === 'NoSuchBucket') {
    return new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `${prefix}: the bucket does not exist; create it, or add ?createBucket=true to the store URL (leasehold init does)`,
      { cause: error, retryable: false },
    );
  }
  const noRegion = missingRegion(error, prefix);
  if (noRegion) return noRegion;
  const status = e.$metadata?.httpStatusCode;
  const permanent = PERMANENT[name];
  const clientFault = e.$fault === 'client' && status !== undefined && status < 500;
  const throttled = status === 429 || status === 503 || TRANSIENT[name] !== undefined;
  const retryable = permanent === undefined && (!clientFault || throttled);
  const hint = permanent ?? TRANSIENT[name];
  const label = name !== '' && name !== 'Error' && !message.includes(name) ? `${name}: ` : '';
  const http = status !== undefined && !message.includes(String(status)) ? ` (HTTP ${status})` : '';
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `${prefix}: ${label}${message}${http}${hint ? ` (${hint})` : ''}`,
    { cause: error, retryable },
  );
}

/** A 412: the condition of a conditional write was refused. */
export function isPreconditionFailed(error: unknown): boolean {
  return statusOf(error) === 412 || nameOf(error) === 'PreconditionFailed';
}

/**
 * An answer that does not say whether a conditional write landed: a 409 (S3's answer to a
 * conditional write racing another), any 5xx (radosgw answers some losers of a race with 500),
 * or a 412 after the SDK sent the request more than once (an earlier attempt may have landed,
 * its answer lost). The store decides these by reading the object back.
 */
export function isUnclear(error: unknown): boolean {
  const status = statusOf(error);
  if (status === 409 || (status !== undefined && status >= 500)) return true;
  return isPreconditionFailed(error) && wasRetried(error);
}

/** A 404 on a read: there is no object. */
export function isNotFound(error: unknown): boolean {
  const name = nameOf(error);
  return name === 'NoSuchKey' || (name === 'NotFound' && statusOf(error) === 404);
}

export function isBucketMissing(error: unknown): boolean {
  return nameOf(error) === 'NoSuchBucket';
}

export function isBucketTaken(error: unknown): boolean {
  const name = nameOf(error);
  return name === 'BucketAlreadyOwnedByYou' || name === 'BucketAlreadyExists';
}

/** What an endpoint answers a request whose signature it will not check as sent (not a wrong key). */
export const SIGNATURE_REFUSED = new Set([
  'AuthorizationHeaderMalformed',
  'SignatureDoesNotMatch',
  'InvalidRequest',
  'MissingSecurityHeader',
  'XAmzContentSHA256Mismatch',
]);

/**
 * How a read of a bucket configuration was refused: `none` for one of `noneNames` (no such
 * configuration), `unsupported` where the endpoint does not implement it, `denied` where the
 * credentials may not read it; `undefined` for any other error.
 */
export function configRefusal(
  error: unknown,
  noneNames: readonly string[],
):
  | { readonly kind: 'none' }
  | { readonly kind: 'unsupported' | 'denied'; readonly why: string }
  | undefined {
  const code = (error as { name?: unknown } | null)?.name;
  const status = statusOf(error);
  // The SDK says UnknownError for an error answer without a message (radosgw sends none).
  const text = error instanceof Error ? error.message : '';
  const message = text === '' || text === 'UnknownError' || text === code ? '' : `: ${text}`;
  if (typeof code === 'string' && noneNames.includes(code)) return { kind: 'none' };
  if (code === 'NotImplemented' || status === 501 || status === 405)
    return { kind: 'unsupported', why: `not implemented by this endpoint (${String(code)})` };
  if (code === 'AccessDenied' || code === 'Forbidden' || status === 403)
    return { kind: 'denied', why: `${String(code)}${message}` };
  return undefined;
}
