import { invalidArgument } from '../../core/errors.js';
import {
  checkIdentifier as checkName,
  checkInteger,
  checkKnownKeys,
  describe,
  optionKeys,
} from '../../core/options.js';

/** Where a `MysqlStore` keeps its records, and its timeouts. */
export interface MysqlStoreOptions {
  /** Table holding the lease records; `<table>_meta` holds the schema version. @default 'leasehold_leases' */
  table?: string;
  /**
   * How long, in ms, getting a connection may take (waiting for a free pooled one, or TCP connect
   * plus handshake for a new one) before the call fails with `STORE_UNAVAILABLE`. @default 5000
   */
  connectTimeoutMs?: number;
  /**
   * How long, in ms, one call's statements may take once sent. Past it the connection is dropped (a
   * paused server cannot hold it) and the call fails with `STORE_UNAVAILABLE`; the server may
   * still apply what it had received. @default 5000
   */
  queryTimeoutMs?: number;
}

/** Where a store that owns its pool connects; what a `mysql://` URL holds. */
export interface MysqlConnectionOptions extends MysqlStoreOptions {
  /** The server's host name or address. @default '127.0.0.1' */
  host?: string;
  /** The server's TCP port. @default 3306 */
  port?: number;
  /** The user to connect as. */
  user?: string;
  /** That user's password. */
  password?: string;
  /** The database holding the lease tables: 1 to 64 letters, digits, `_`, `$` or `-`. */
  database: string;
  /** Most connections the store opens at once. @default 10 */
  poolSize?: number;
}

export const MYSQL_DEFAULTS = Object.freeze({
  table: 'leasehold_leases',
  connectTimeoutMs: 5000,
  queryTimeoutMs: 5000,
  host: '127.0.0.1',
  port: 3306,
  poolSize: 10,
});

// MySQL names are at most 64 characters; the table name leaves room for the `_meta` suffix.
const DATABASE = /^[A-Za-z0-9_$-]{1,64}$/;

export function checkIdentifier(field: string, value: unknown): string {
  return checkName(field, value, 59);
}

export function checkDatabase(value: unknown): string {
  if (typeof value !== 'string' || !DATABASE.test(value)) {
    throw invalidArgument('database', 'must be 1 to 64 letters, digits, _, $ or -');
  }
  return value;
}

export type ResolvedMysqlOptions = Required<MysqlStoreOptions>;

/** `MysqlStore.open` resolves its connection options here too, so their fields are known. */
const MYSQL_KEYS = optionKeys<MysqlConnectionOptions>({
  table: true,
  connectTimeoutMs: true,
  queryTimeoutMs: true,
  host: true,
  port: true,
  user: true,
  password: true,
  database: true,
  poolSize: true,
});

export function resolveMysqlOptions(options: MysqlStoreOptions = {}): ResolvedMysqlOptions {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('MysqlStore options', options, MYSQL_KEYS);
  return {
    table: checkIdentifier('table', options.table ?? MYSQL_DEFAULTS.table),
    connectTimeoutMs: checkInteger(
      'connectTimeoutMs',
      options.connectTimeoutMs ?? MYSQL_DEFAULTS.connectTimeoutMs,
      1,
      600_000,
    ),
    queryTimeoutMs: checkInteger(
      'queryTimeoutMs',
      options.queryTimeoutMs ?? MYSQL_DEFAULTS.queryTimeoutMs,
      1,
      600_000,
    ),
  };
}

/** The mysql2 pool settings for a pool the store creates and owns. */
export function poolConfig(options: MysqlConnectionOptions, resolved: ResolvedMysqlOptions) {
  const poolSize = checkInteger('poolSize', options.poolSize ?? MYSQL_DEFAULTS.poolSize, 1, 1000);
  const port = checkInteger('port', options.port ?? MYSQL_DEFAULTS.port, 1, 65_535);
  return {
    host: options.host ?? MYSQL_DEFAULTS.host,
    port,
    user: options.user,
    password: options.password,
    database: checkDatabase(options.database),
    connectionLimit: poolSize,
    maxIdle: poolSize,
    idleTimeout: 60_000,
    connectTimeout: resolved.connectTimeoutMs,
    // A transition's statements travel in one round trip (see mysql-ops.ts).
    multipleStatements: true,
    charset: 'utf8mb4',
    enableKeepAlive: true,
    supportBigNumbers: true,
    // No stack capture on every call (mysql2's "long stack traces"): errors are mapped at the
    // store boundary, and the capture costs more client time than the rest of a call's driver work.
    trace: false,
  };
}
