import pg from 'pg';
import type { PgPool, PgPoolClient } from '../../src/stores/postgres/index.js';

/** A pool that counts statements sent and ReadyForQuery messages received (one per round trip). */
export interface CountingPool {
  readonly pool: PgPool;
  statements(): number;
  roundTrips(): number;
  /** Connections the pool has opened so far (a connection closed after an error shows as a new one). */
  connections(): number;
}

export function countingPool(url: string, max = 4): CountingPool {
  const inner = new pg.Pool({ connectionString: url, max });
  let sent = 0;
  let ready = 0;
  let opened = 0;
  const wrapped = new WeakSet<object>();
  // An idle connection the server ends (it stops at the end of a file) is dropped, not raised.
  inner.on('error', () => {});
  inner.on('connect', (client) => {
    opened++;
    const connection = (client as unknown as { connection: pg.Connection }).connection;
    connection.on('readyForQuery', () => ready++);
  });
  const pool: PgPool = {
    query: (config) => {
      sent++;
      return inner.query(config);
    },
    // The store's statements go through checked-out connections: count on each, once.
    connect: async () => {
      const client = await inner.connect();
      if (!wrapped.has(client)) {
        wrapped.add(client);
        const query = client.query.bind(client) as PgPoolClient['query'];
        Object.assign(client, {
          query: (config: Parameters<PgPoolClient['query']>[0]) => {
            sent++;
            return query(config);
          },
        });
      }
      return client as unknown as PgPoolClient;
    },
    end: () => inner.end(),
  };
  return { pool, statements: () => sent, roundTrips: () => ready, connections: () => opened };
}
