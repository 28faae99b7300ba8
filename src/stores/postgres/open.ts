import type { StoreOpenOptions, StoreUrl } from '../../core/store-url.js';
import { PostgresStore } from './postgres-store.js';
import { parsePostgresUrl } from './postgres-url.js';

/**
 * `postgres://user:password@host:port/database` (or `postgresql://`) with
 * `?schema=&table=&statementTimeoutMs=&connectTimeoutMs=&poolSize=&notify=&prepare=&sslmode=&application_name=`.
 * Connects on first use. The server's clock judges expiry and the table is created on first use:
 * `options` changes nothing.
 */
export async function openPostgres(
  url: StoreUrl,
  _options: StoreOpenOptions = {},
): Promise<PostgresStore> {
  const { connection, options } = parsePostgresUrl(url);
  return PostgresStore.open(connection, options);
}
