import { openStore } from '../../../src/index.js';
import {
  mariadbUnavailable,
  startMariadb,
  type MariadbServer,
} from '../../harness/mariadb-server.js';
import type { StoreFactory } from '../factory.js';

/** A private MariaDB per test file; each namespace is a table (`mysql://…?table=<namespace>`). */
export function mysqlFactory(): StoreFactory {
  let server: MariadbServer | undefined;
  return {
    name: 'mysql',
    durable: true,
    unavailable: mariadbUnavailable,
    setup: async () => {
      server = await startMariadb();
    },
    open: (namespace) => openStore(server!.url({ table: namespace })),
    teardown: async () => {
      await server?.dispose();
      server = undefined;
    },
  };
}
