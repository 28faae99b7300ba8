import { ErrorCode, LeaseError } from '../../core/errors.js';
import { intParam, takeParams, type StoreUrl } from '../../core/open-store.js';
import { SqliteStore } from './sqlite-store.js';

/** `sqlite:PATH`, `sqlite::memory:`, `sqlite:///abs/path`, with `?table=&busyTimeoutMs=&maxClockSkewMs=&synchronous=&watchPollMs=`. */
export async function openSqlite(url: StoreUrl): Promise<SqliteStore> {
  let path = url.rest;
  if (path.startsWith('//')) path = decodeURIComponent(path.slice(2));
  if (path === '') {
    throw new LeaseError(
      ErrorCode.STORE_URL_INVALID,
      `sqlite store URL needs a path, like sqlite:./leasehold.db or sqlite::memory:`,
    );
  }
  const params = takeParams(url, [
    'table',
    'busyTimeoutMs',
    'maxClockSkewMs',
    'synchronous',
    'watchPollMs',
  ]);
  const synchronous = params.synchronous;
  if (synchronous !== undefined && synchronous !== 'full' && synchronous !== 'normal') {
    throw new LeaseError(
      ErrorCode.STORE_URL_INVALID,
      `parameter synchronous in ${url.redacted} must be full or normal`,
    );
  }
  return SqliteStore.open(path, {
    table: params.table,
    busyTimeoutMs: intParam(url, params, 'busyTimeoutMs'),
    maxClockSkewMs: intParam(url, params, 'maxClockSkewMs'),
    synchronous,
    watchPollMs: intParam(url, params, 'watchPollMs'),
  });
}
