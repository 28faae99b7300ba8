import { ErrorCode, LeaseError } from '../../core/errors.js';
import { intParam, takeParams, type StoreUrl } from '../../core/open-store.js';
import type { DynamodbConnectOptions, DynamodbStoreOptions } from './dynamodb-options.js';

/** What a `dynamodb://` URL asks for. */
export interface DynamodbTarget {
  readonly store: DynamodbStoreOptions & { table: string };
  readonly connect: DynamodbConnectOptions;
}

const FORM = 'dynamodb://TABLE?region=us-east-1';
const PARAMS = [
  'region',
  'endpoint',
  'maxClockSkewMs',
  'requestTimeoutMs',
  'connectTimeoutMs',
  'createTable',
  'concurrency',
];

/**
 * `dynamodb://TABLE?region=&endpoint=&maxClockSkewMs=&requestTimeoutMs=&connectTimeoutMs=&createTable=&concurrency=`.
 * Values are checked when the store is opened; here only their form.
 */
export function parseDynamodbUrl(url: StoreUrl): DynamodbTarget {
  const safe = { ...url, redacted: redactEndpoint(url.redacted) };
  const invalid = (problem: string): LeaseError =>
    new LeaseError(ErrorCode.STORE_URL_INVALID, `${problem} in ${safe.redacted}; expected ${FORM}`);
  if (!url.rest.startsWith('//')) throw invalid('no table');
  let table: string;
  try {
    table = decodeURIComponent(url.rest.slice(2).replace(/\/$/, ''));
  } catch {
    throw invalid('a malformed %-escape in the table name');
  }
  if (table === '') throw invalid('no table');
  const params = takeParams(safe, PARAMS);
  const createTable = params.createTable;
  if (createTable !== undefined && createTable !== 'true' && createTable !== 'false')
    throw invalid(`parameter createTable=${JSON.stringify(createTable)} must be true or false`);
  return {
    store: {
      table,
      maxClockSkewMs: intParam(safe, params, 'maxClockSkewMs'),
      requestTimeoutMs: intParam(safe, params, 'requestTimeoutMs'),
      concurrency: intParam(safe, params, 'concurrency'),
      createTable: createTable === undefined ? undefined : createTable === 'true',
    },
    connect: {
      region: params.region,
      endpoint: params.endpoint,
      connectTimeoutMs: intParam(safe, params, 'connectTimeoutMs'),
    },
  };
}

/** Hides credentials someone put into an `endpoint=` parameter, encoded or not. */
export function redactEndpoint(text: string): string {
  return text
    .replace(/(\/\/)[^/@?&]*@/g, '$1***@')
    .replace(/(%2F%2F)((?!%2F|&).)*?(%40)/gi, '$1***$3');
}
