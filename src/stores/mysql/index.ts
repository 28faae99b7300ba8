export { MysqlStore } from './mysql-store.js';
export type { MysqlPool, MysqlConnection, MysqlQueryOptions } from './mysql-driver.js';
export type { MysqlStoreOptions, MysqlConnectionOptions } from './mysql-options.js';
