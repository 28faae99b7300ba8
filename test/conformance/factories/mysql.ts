import { openStore } from '../../../src/index.js';
import {
  MARIADB_DATABASE,
  mariadbUnavailable,
  startMariadb,
  type MariadbServer,
} from '../../harness/mariadb-server.js';
import type { StoreFactory } from '../factory.js';

/**
 * A private MariaDB per test file; each namespace is a table (`mysql://…?table=<namespace>`). A
 * call's deadline is its query timeout and the connect timeout; the server can be paused and
 * restarted (SIGKILL, then a start on the same folder and port).
 */
export function mysqlFactory(): StoreFactory {
  let server: MariadbServer | undefined;
  return {
    name: 'mysql',
    durable: true,
    unavailable: mariadbUnavailable,
    setup: async () => {
      server = await startMariadb();
    },
    open: (namespace, options) => {
      const ms = options?.deadlineMs;
      const deadline: Record<string, number> =
        ms === undefined ? {} : { queryTimeoutMs: ms, connectTimeoutMs: ms };
      return openStore(server!.url({ table: namespace, ...deadline }));
    },
    pause: () => server!.pause(),
    resume: () => server?.resume(),
    restart: () => server!.restart(),
    unreachableUrl: (port, deadlineMs) =>
      `mysql://root:s3cret@127.0.0.1:${port}/${MARIADB_DATABASE}?connectTimeoutMs=${deadlineMs}`,
    teardown: async () => {
      await server?.dispose();
      server = undefined;
    },
  };
}
