import { ErrorCode, LeaseError } from '../../core/errors.js';
import { missingRegion } from '../aws/aws-errors.js';
import type { Item } from './dynamodb-driver.js';

/** How to make the table, for every message about a missing one. */
export function createTableHint(table: string): string {
  return (
    `create it with ?createTable=true in the store URL or store.createTable(), ` +
    `or yourself: partition key "resource" (String), no sort key, for example ` +
    `aws dynamodb create-table --table-name ${table} --attribute-definitions AttributeName=resource,AttributeType=S ` +
    `--key-schema AttributeName=resource,KeyType=HASH --billing-mode PAY_PER_REQUEST`
  );
}

const PERMISSIONS =
  'the credentials need dynamodb:DescribeTable, GetItem, UpdateItem and Scan on the table (and CreateTable to create it)';

/** Errors that repeating the call cannot fix, with what to do about them. */
const PERMANENT: Readonly<Record<string, string>> = {
  AccessDeniedException: PERMISSIONS,
  UnrecognizedClientException: 'the access key is not known to this endpoint or region',
  InvalidSignatureException: 'the secret key does not match the access key',
  MissingAuthenticationTokenException: 'the request was not signed',
  IncompleteSignatureException: 'the request signature is malformed',
  ExpiredTokenException: 'the session token expired: refresh the credentials',
  CredentialsProviderError:
    'no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run with a role',
  ValidationException: 'DynamoDB refused the request',
  SerializationException: 'DynamoDB could not read the request',
};

/** Hints for errors that pass on their own. */
const TRANSIENT: Readonly<Record<string, string>> = {
  ProvisionedThroughputExceededException: 'throttled: raise the table capacity or use on-demand',
  ThrottlingException: 'throttled',
  RequestLimitExceeded: 'throttled: the account request limit was reached',
  LimitExceededException: 'too many control-plane operations at once',
  InternalServerError: 'DynamoDB had an internal error',
  ServiceUnavailable: 'DynamoDB is unavailable',
  TimeoutError: 'no answer in time (is the endpoint paused or unreachable?)',
  TransactionConflictException: 'the item is in a transaction of someone else',
};

interface SdkError {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $fault?: unknown;
  $metadata?: { httpStatusCode?: number };
}

/**
 * Turns anything the SDK throws into a `LeaseError`, once, at the store boundary. Throttling,
 * server faults (5xx), timeouts and network failures are retryable; a missing table, bad
 * credentials, missing permissions and refused requests are not. `ConditionalCheckFailedException`
 * never reaches here: the store answers it with `null` / `false`.
 */
export function mapDynamodbError(
  error: unknown,
  operation: string,
  table: string,
  where: string,
): LeaseError {
  if (error instanceof LeaseError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkError;
  const name = typeof e.name === 'string' ? e.name : '';
  const message = error instanceof Error ? error.message : String(error);
  const prefix = `DynamoDB ${operation} on table "${table}"${where} failed`;
  if (name === 'ResourceNotFoundException') {
    return new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `${prefix}: the table does not exist; ${createTableHint(table)}`,
      { cause: error, retryable: false },
    );
  }
  const noRegion = missingRegion(error, prefix);
  if (noRegion) return noRegion;
  const status = e.$metadata?.httpStatusCode;
  const signatureExpired = name === 'InvalidSignatureException' && /expired/i.test(message);
  const permanent = signatureExpired ? undefined : PERMANENT[name];
  const clientFault = e.$fault === 'client' && status !== undefined && status < 500;
  const throttled = status === 429 || TRANSIENT[name] !== undefined;
  const retryable = permanent === undefined && (!clientFault || throttled);
  const hint = permanent ?? TRANSIENT[name];
  const label = name !== '' && name !== 'Error' && !message.includes(name) ? `${name}: ` : '';
  const code = typeof e.code === 'string' && !message.includes(e.code) ? `${e.code}: ` : '';
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `${prefix}: ${label}${code}${message}${hint ? ` (${hint})` : ''}`,
    { cause: error, retryable },
  );
}

/** A failed condition: the answer "not yours" / "held by someone else", not an error. */
export function isConditionFailed(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'ConditionalCheckFailedException';
}

/**
 * The item that failed a condition, when the request asked for it with
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` and the endpoint honours that (DynamoDB does;
 * dynalite does not).
 */
export function conditionItem(error: unknown): Item | undefined {
  const item = (error as { Item?: unknown } | null)?.Item;
  return typeof item === 'object' && item !== null ? (item as Item) : undefined;
}

/** Whether a `CreateTable` failed because the table exists already (another process made it). */
export function isTableInUse(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'ResourceInUseException';
}

export function isTableMissing(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'ResourceNotFoundException';
}

/** What an endpoint answers a request whose signature it cannot check (not a wrong secret). */
export const SIGNATURE_REFUSED = new Set([
  'IncompleteSignatureException',
  'MissingAuthenticationTokenException',
  'InvalidSignatureException',
  'SignatureDoesNotMatch',
]);

/** The caller's credentials may not make this request (AccessDeniedException). */
export function isAccessDenied(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'AccessDeniedException';
}
