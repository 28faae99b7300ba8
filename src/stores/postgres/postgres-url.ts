import {
  boolParam,
  checkUrlOptions,
  intParam,
  takeParams,
  urlError,
  type StoreUrl,
} from '../../core/store-url.js';
import { resolvePostgresOptions, type PostgresStoreOptions } from './postgres-options.js';

/** What a `postgres://` URL names: the driver's connection string and the store's options. */
export interface PostgresTarget {
  /** The URL for node-postgres: server, credentials, database, and only the driver's own parameters. */
  readonly connection: string;
  readonly options: PostgresStoreOptions;
}

/** The store's parameters; the rest of `PARAMS` are the driver's and stay in the connection string. */
const STORE_PARAMS = [
  'schema',
  'table',
  'statementTimeoutMs',
  'connectTimeoutMs',
  'poolSize',
  'notify',
  'prepare',
];
const DRIVER_PARAMS = ['sslmode', 'application_name'];
const PARAMS = [...STORE_PARAMS, ...DRIVER_PARAMS];

/**
 * `postgres://user:password@host:port/database` (or `postgresql://`) with the store's options
 * `?schema=&table=&statementTimeoutMs=&connectTimeoutMs=&poolSize=&notify=&prepare=` and the
 * driver's `sslmode=` and `application_name=`. Every store option is checked here, before connecting.
 */
export function parsePostgresUrl(url: StoreUrl): PostgresTarget {
  if (!url.rest.startsWith('//') || !URL.canParse(`postgres:${url.rest}`)) {
    throw urlError(url, 'not a PostgreSQL URL', {
      hint: 'expected postgres://user:password@host:5432/database',
    });
  }
  const params = takeParams(url, PARAMS);
  const driver = new URLSearchParams();
  for (const key of DRIVER_PARAMS) {
    if (params[key] !== undefined) driver.set(key, params[key]);
  }
  const query = driver.size > 0 ? `?${driver}` : '';
  const options: PostgresStoreOptions = {
    schema: params.schema,
    table: params.table,
    statementTimeoutMs: intParam(url, params, 'statementTimeoutMs'),
    connectTimeoutMs: intParam(url, params, 'connectTimeoutMs'),
    poolSize: intParam(url, params, 'poolSize'),
    notify: boolParam(url, params, 'notify'),
    prepare: boolParam(url, params, 'prepare'),
    label: `PostgreSQL (${url.redacted})`,
  };
  checkUrlOptions(url, () => resolvePostgresOptions(options));
  return { connection: `postgres:${url.rest}${query}`, options };
}
