import type { StoreOpenOptions, StoreUrl } from '../../core/store-url.js';
import { MysqlStore } from './mysql-store.js';
import { parseMysqlUrl } from './mysql-url.js';

/**
 * `mysql://user:password@host:port/database` (or `mariadb://…`), with
 * `?table=&connectTimeoutMs=&queryTimeoutMs=&poolSize=`. User and password are percent-decoded.
 * The server's clock judges expiry and the table is created on first use: `options` changes
 * nothing.
 */
export async function openMysql(
  url: StoreUrl,
  _options: StoreOpenOptions = {},
): Promise<MysqlStore> {
  return MysqlStore.open(parseMysqlUrl(url));
}
