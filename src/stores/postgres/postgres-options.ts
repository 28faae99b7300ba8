import { resolveOnWatchError, type WatchErrorHandler } from '../../core/watch-hub.js';
import { invalidArgument } from '../../core/errors.js';
import {
  checkIdentifier as checkName,
  checkInteger,
  checkKnownKeys,
  describe,
  optionKeys,
} from '../../core/options.js';

/** Where a `PostgresStore` keeps its records, and its timeouts, pool and notifications. */
export interface PostgresStoreOptions {
  /** Schema of the lease table; created when missing. @default 'public' */
  schema?: string;
  /** Table holding the lease records; `<table>_meta` holds the schema version. @default 'leasehold_leases' */
  table?: string;
  /**
   * A statement unanswered after this long (in ms) fails with `STORE_UNAVAILABLE` (the client gives
   * up on it, and on pools the store creates the server cancels it too), so a paused or partitioned
   * server never makes a call hang. @default 5000
   */
  statementTimeoutMs?: number;
  /** Connecting (or waiting for a free pooled connection) fails after this long, in ms. Pools the store creates only. @default 5000 */
  connectTimeoutMs?: number;
  /** Connections in the pool the store creates. @default 10 */
  poolSize?: number;
  /**
   * Prepare each statement once per connection (named prepared statements), which roughly halves
   * the server's work per call. Turn off behind a pooler that cannot keep them (PgBouncer in
   * transaction mode before 1.21, or without `max_prepared_statements`). @default true
   */
  prepare?: boolean;
  /**
   * Releases NOTIFY the `watch` listeners waiting for them: a release checks (on the statement's
   * snapshot) whether a watcher registered a prefix covering it, and notifies only then, so
   * releases nobody waits for never take PostgreSQL's notification queue lock (which serialises
   * notifying commits). `false`: releases skip the check, and `watch` is unavailable. @default true
   */
  notify?: boolean;
  /**
   * Told when the `watch` connection fails (a `STORE_UNAVAILABLE` LeaseError, once per outage; it
   * reconnects by itself).
   * @default emits a process warning
   */
  onWatchError?: WatchErrorHandler;
  /** Names the store in error messages; `openStore` passes the URL with its password hidden. @default 'PostgreSQL' */
  label?: string;
}

export type ResolvedPostgresOptions = Required<PostgresStoreOptions>;

export const POSTGRES_DEFAULTS = Object.freeze({
  schema: 'public',
  table: 'leasehold_leases',
  statementTimeoutMs: 5000,
  connectTimeoutMs: 5000,
  poolSize: 10,
  prepare: true,
  notify: true,
  label: 'PostgreSQL',
});

const POSTGRES_KEYS = optionKeys<PostgresStoreOptions>({
  schema: true,
  table: true,
  statementTimeoutMs: true,
  connectTimeoutMs: true,
  poolSize: true,
  prepare: true,
  notify: true,
  onWatchError: true,
  label: true,
});

// 58 characters leave room for the `_meta` suffix within PostgreSQL's 63-byte identifiers.

export function checkIdentifier(field: string, value: unknown): string {
  return checkName(field, value, 58);
}

export function resolvePostgresOptions(
  options: PostgresStoreOptions = {},
): ResolvedPostgresOptions {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('PostgresStore options', options, POSTGRES_KEYS);
  const notify = checkBoolean('notify', options.notify ?? POSTGRES_DEFAULTS.notify);
  const prepare = checkBoolean('prepare', options.prepare ?? POSTGRES_DEFAULTS.prepare);
  const onWatchError = resolveOnWatchError(options.onWatchError);
  const label = options.label ?? POSTGRES_DEFAULTS.label;
  if (typeof label !== 'string') throw invalidArgument('label', 'must be a string');
  return {
    schema: checkIdentifier('schema', options.schema ?? POSTGRES_DEFAULTS.schema),
    table: checkIdentifier('table', options.table ?? POSTGRES_DEFAULTS.table),
    statementTimeoutMs: checkInteger(
      'statementTimeoutMs',
      options.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs,
      1,
      600_000,
    ),
    connectTimeoutMs: checkInteger(
      'connectTimeoutMs',
      options.connectTimeoutMs ?? POSTGRES_DEFAULTS.connectTimeoutMs,
      1,
      600_000,
    ),
    poolSize: checkCount('poolSize', options.poolSize ?? POSTGRES_DEFAULTS.poolSize),
    prepare,
    notify,
    onWatchError,
    label,
  };
}

function checkBoolean(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean')
    throw invalidArgument(field, `must be a boolean, got ${describe(value)}`);
  return value;
}

function checkCount(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1000)
    throw invalidArgument(field, `must be an integer from 1 to 1000, got ${describe(value)}`);
  return value;
}
