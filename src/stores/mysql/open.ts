import type { StoreUrl } from '../../core/store-url.js';
import { MysqlStore } from './mysql-store.js';
import { parseMysqlUrl } from './mysql-url.js';

/**
 * `mysql://user:password@host:port/database` (or `mariadb://…`), with
 * `?table=&connectTimeoutMs=&queryTimeoutMs=&poolSize=`. User and password are percent-decoded.
 */
export async function openMysql(url: StoreUrl): Promise<MysqlStore> {
  return MysqlStore.open(parseMysqlUrl(url));
}
