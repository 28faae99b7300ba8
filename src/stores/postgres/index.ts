export { PostgresStore } from './postgres-store.js';
export type { PostgresStoreOptions } from './postgres-options.js';
export type {
  PgConnection,
  PgPool,
  PgPoolClient,
  PgQueryConfig,
  PgQueryResult,
  PgNotification,
} from './postgres-driver.js';
