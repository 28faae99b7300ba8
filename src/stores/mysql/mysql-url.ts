import { ErrorCode, LeaseError } from '../../core/errors.js';
import {
  checkUrlOptions,
  intParam,
  takeParams,
  urlError,
  type StoreUrl,
} from '../../core/store-url.js';
import {
  checkDatabase,
  poolConfig,
  resolveMysqlOptions,
  type MysqlConnectionOptions,
} from './mysql-options.js';

const FORM = 'mysql://user:password@host:3306/database';
const PARAMS = ['table', 'connectTimeoutMs', 'queryTimeoutMs', 'poolSize'];

/**
 * `mysql://user:password@host:port/database` (or `mariadb://…`), with
 * `?table=&connectTimeoutMs=&queryTimeoutMs=&poolSize=`. User and password are percent-decoded.
 * Every value is checked here, before connecting.
 */
export function parseMysqlUrl(url: StoreUrl): MysqlConnectionOptions {
  const hint = `expected ${FORM}`;
  if (!url.rest.startsWith('//')) throw urlError(url, `not a ${url.scheme}: URL`, { hint });
  const params = takeParams(url, PARAMS);
  let parsed: URL;
  try {
    parsed = new URL(`${url.scheme}:${url.rest}`);
  } catch (error) {
    // The text may hold a password the redaction could not find: do not echo it.
    throw new LeaseError(
      ErrorCode.STORE_URL_INVALID,
      `${url.scheme}: store URL is not a valid URL; ${hint}`,
      { cause: error },
    );
  }
  const decode = (part: string): string => {
    try {
      return decodeURIComponent(part);
    } catch (error) {
      throw urlError(url, 'a malformed %-escape', { hint, cause: error });
    }
  };
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
  if (!options.database) throw urlError(url, 'no database', { hint });
  checkUrlOptions(url, () => {
    checkDatabase(options.database);
    return poolConfig(options, resolveMysqlOptions(options));
  });
  return options;
}
