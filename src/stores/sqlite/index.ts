export { SqliteStore, type SqliteDatabase, type SqliteStatement } from './sqlite-store.js';
export type { SqliteStoreOptions } from './sqlite-options.js';
