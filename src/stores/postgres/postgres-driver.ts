import { loadDriver } from '../../core/load-driver.js';
/** A statement as the store sends it: text plus bound values, never values spliced into text. */
export interface PgQueryConfig {
  text: string;
  /** Prepares the statement under this name once per connection and reuses it. */
  name?: string | undefined;
  values?: unknown[];
  /** Client-side deadline in ms: a statement unanswered this long fails (node-postgres `query_timeout`). */
  query_timeout?: number;
}

export interface PgQueryResult {
  rows: Record<string, unknown>[];
  rowCount: number | null;
}

/** What a LISTEN connection delivers for each NOTIFY. */
export interface PgNotification {
  channel: string;
  payload?: string | undefined;
}

/** The part of node-postgres's `PoolClient` this store uses (one checked-out connection). */
export interface PgPoolClient {
  query(config: PgQueryConfig): Promise<PgQueryResult>;
  /** Returns the connection; with an error (or `true`) the pool closes it instead of reusing it. */
  release(error?: Error | boolean): void;
  on(event: 'notification', listener: (message: PgNotification) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
}

/** The part of node-postgres's `Pool` this store uses; pass your own `pg.Pool` or anything shaped like it. */
export interface PgPool {
  /** Runs one statement on any pooled connection. */
  query(config: PgQueryConfig): Promise<PgQueryResult>;
  /**
   * Checks a connection out (for the schema check, each statement and the `watch` LISTEN
   * connection): with a callback, node-postgres' form, called as the pool hands it over; a pool
   * that answers only with a promise is fine too.
   */
  connect(
    callback?: (error: Error | undefined, client: PgPoolClient | undefined) => void,
  ): Promise<PgPoolClient> | void;
  /** Closes the pool; the store calls it on `close()` only for a pool it created. */
  end(): Promise<void>;
}

/** Connection settings for a pool the store creates: a `postgres://` URL or node-postgres `PoolConfig` fields. */
export type PgConnection = string | Record<string, unknown>;

/** The part of the `pg` module the store needs to create its own pool. */
export interface PgModule {
  Pool: new (config: Record<string, unknown>) => PgPool & {
    on(event: 'error', listener: (error: Error) => void): unknown;
  };
}

/** Loads `pg` (node-postgres), or fails with `DRIVER_MISSING` naming it. */
export function loadPg(): Promise<PgModule> {
  return loadDriver<PgModule>('pg', 'postgres');
}
