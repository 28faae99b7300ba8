export { SqliteStore } from './sqlite-store.js';
export type { SqliteDatabase, SqliteStatement } from './sqlite-driver.js';
export type { SqliteStoreOptions } from './sqlite-options.js';
