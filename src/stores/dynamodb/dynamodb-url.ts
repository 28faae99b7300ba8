import {
  boolParam,
  checkUrlOptions,
  intParam,
  takeParams,
  urlError,
  type StoreUrl,
  redactEndpoint,
} from '../../core/store-url.js';
import {
  resolveConnectOptions,
  resolveDynamodbOptions,
  type DynamodbConnectOptions,
  type DynamodbStoreOptions,
} from './dynamodb-options.js';

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
  'fastPath',
];

/**
 * `dynamodb://TABLE?region=&endpoint=&maxClockSkewMs=&requestTimeoutMs=&connectTimeoutMs=&createTable=&concurrency=&fastPath=`.
 * Every value is checked here, before a client is made.
 */
export function parseDynamodbUrl(url: StoreUrl): DynamodbTarget {
  const safe = { ...url, redacted: redactEndpoint(url.redacted) };
  const hint = `expected ${FORM}`;
  if (!url.rest.startsWith('//')) throw urlError(safe, 'no table', { hint });
  let table: string;
  try {
    table = decodeURIComponent(url.rest.slice(2).replace(/\/$/, ''));
  } catch (error) {
    throw urlError(safe, 'a malformed %-escape in the table name', { hint, cause: error });
  }
  if (table === '') throw urlError(safe, 'no table', { hint });
  const params = takeParams(safe, PARAMS);
  const target: DynamodbTarget = {
    store: {
      table,
      maxClockSkewMs: intParam(safe, params, 'maxClockSkewMs'),
      requestTimeoutMs: intParam(safe, params, 'requestTimeoutMs'),
      concurrency: intParam(safe, params, 'concurrency'),
      createTable: boolParam(safe, params, 'createTable'),
      fastPath: boolParam(safe, params, 'fastPath'),
    },
    connect: {
      region: params.region,
      endpoint: params.endpoint,
      connectTimeoutMs: intParam(safe, params, 'connectTimeoutMs'),
    },
  };
  checkUrlOptions(safe, () => {
    resolveDynamodbOptions(target.store);
    return resolveConnectOptions(target.connect);
  });
  return target;
}
