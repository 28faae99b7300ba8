import { ErrorCode, isLeaseError, LeaseError } from '../../core/errors.js';
import { intParam, takeParams, type StoreUrl } from '../../core/open-store.js';
import { checkDatabase, checkIdentifier, type MysqlConnectionOptions } from './mysql-options.js';
import { MysqlStore } from './mysql-store.js';

const FORM = 'mysql://user:password@host:3306/database';

/**
 * `mysql://user:password@host:port/database` (or `mariadb://…`), with
 * `?table=&connectTimeoutMs=&queryTimeoutMs=&poolSize=`. User and password are percent-decoded.
 */
export async function openMysql(url: StoreUrl): Promise<MysqlStore> {
  const invalid = (problem: string, cause?: unknown): LeaseError =>
    new LeaseError(ErrorCode.STORE_URL_INVALID, `${url.scheme}: store URL ${problem}`, { cause });
  const params = takeParams(url, ['table', 'connectTimeoutMs', 'queryTimeoutMs', 'poolSize']);
  if (!url.rest.startsWith('//')) throw invalid(`must look like ${FORM}, got ${url.redacted}`);
  let parsed: URL;
  try {
    parsed = new URL(`${url.scheme}:${url.rest}`);
  } catch (error) {
    // The text may hold a password the redaction could not find: do not echo it.
    throw invalid(`is not a valid URL; expected ${FORM}`, error);
  }
  const options: MysqlConnectionOptions = {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1') || undefined,
    port: parsed.port ? Number(parsed.port) : undefined,
    user: decode(parsed.username) || undefined,
    password: decode(parsed.password) || undefined,
    database: decode(parsed.pathname.replace(/^\//, '')),
    table: params.table,
    connectTimeoutMs: intParam(url, params, 'connectTimeoutMs'),
    queryTimeoutMs: intParam(url, params, 'queryTimeoutMs'),
    poolSize: intParam(url, params, 'poolSize'),
  };
  if (!options.database) throw invalid(`needs a database, like ${FORM}; got ${url.redacted}`);
  try {
    checkDatabase(options.database);
    if (options.table !== undefined) checkIdentifier('table', options.table);
    return await MysqlStore.open(options);
  } catch (error) {
    if (isLeaseError(error, ErrorCode.INVALID_ARGUMENT)) {
      throw invalid(`${url.redacted}: ${error.message}`, error);
    }
    throw error;
  }

  function decode(part: string): string {
    try {
      return decodeURIComponent(part);
    } catch (error) {
      throw invalid(`has a malformed %-escape; expected ${FORM}`, error);
    }
  }
}
