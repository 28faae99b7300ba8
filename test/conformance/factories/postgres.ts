import { openStore } from '../../../src/index.js';
import { PostgresServer, postgresUnavailable } from '../../harness/postgres-server.js';
import type { StoreFactory } from '../factory.js';

/** A private PostgreSQL 15 per test file; each namespace is its own table. */
export function postgresFactory(): StoreFactory {
  let server: PostgresServer | undefined;
  return {
    name: 'postgres',
    durable: true,
    unavailable: postgresUnavailable,
    setup: async () => {
      server = await PostgresServer.start();
    },
    open: (namespace) => openStore(`${server!.url}?table=${namespace}&poolSize=4`),
    teardown: async () => {
      await server?.stop();
      server = undefined;
    },
  };
}
