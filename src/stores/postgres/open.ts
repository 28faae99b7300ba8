import { ErrorCode, LeaseError } from '../../core/errors.js';
import { intParam, takeParams, type StoreUrl } from '../../core/open-store.js';
import { PostgresStore } from './postgres-store.js';

const PARAMS = [
  'schema',
  'table',
  'statementTimeoutMs',
  'connectTimeoutMs',
  'poolSize',
  'notify',
  'prepare',
  'sslmode',
  'application_name',
];

/**
 * `postgres://user:password@host:port/database` (or `postgresql://`) with the store's options
 * `?schema=&table=&statementTimeoutMs=&connectTimeoutMs=&poolSize=&notify=&prepare=` and the
 * driver's `sslmode=` and `application_name=`. Connects on first use.
 */
export async function openPostgres(url: StoreUrl): Promise<PostgresStore> {
  if (!url.rest.startsWith('//') || !URL.canParse(`postgres:${url.rest}`)) {
    throw new LeaseError(
      ErrorCode.STORE_URL_INVALID,
      `${url.redacted} is not a PostgreSQL URL like postgres://user:password@host:5432/database`,
    );
  }
  const params = takeParams(url, PARAMS);
  // Only the driver's own parameters reach the connection string; ours are options.
  const driver = new URLSearchParams();
  for (const key of ['sslmode', 'application_name']) {
    if (params[key] !== undefined) driver.set(key, params[key]);
  }
  const query = driver.size > 0 ? `?${driver}` : '';
  try {
    return await PostgresStore.open(`postgres:${url.rest}${query}`, {
      schema: params.schema,
      table: params.table,
      statementTimeoutMs: intParam(url, params, 'statementTimeoutMs'),
      connectTimeoutMs: intParam(url, params, 'connectTimeoutMs'),
      poolSize: intParam(url, params, 'poolSize'),
      notify: boolParam(url, params, 'notify'),
      prepare: boolParam(url, params, 'prepare'),
      label: `PostgreSQL (${url.redacted})`,
    });
  } catch (error) {
    if (error instanceof LeaseError && error.code === ErrorCode.INVALID_ARGUMENT) {
      throw new LeaseError(ErrorCode.STORE_URL_INVALID, `${error.message} in ${url.redacted}`, {
        cause: error,
      });
    }
    throw error;
  }
}

function boolParam(
  url: StoreUrl,
  params: Record<string, string>,
  key: string,
): boolean | undefined {
  const value = params[key];
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') {
    throw new LeaseError(
      ErrorCode.STORE_URL_INVALID,
      `parameter ${key}=${JSON.stringify(value)} in ${url.redacted} must be true or false`,
    );
  }
  return value === 'true';
}
