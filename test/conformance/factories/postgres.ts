import { openStore } from '../../../src/index.js';
import { PostgresServer, postgresUnavailable } from '../../harness/postgres-server.js';
import type { StoreFactory } from '../factory.js';

/**
 * A private PostgreSQL 15 per test file; each namespace is its own table. A call's deadline is its
 * statement timeout and the connect timeout; the server can be paused and restarted (SIGKILL of
 * every server process, then a start on the same folder and port).
 */
export function postgresFactory(): StoreFactory {
  let server: PostgresServer | undefined;
  return {
    name: 'postgres',
    durable: true,
    unavailable: postgresUnavailable,
    setup: async () => {
      server = await PostgresServer.start();
    },
    open: (namespace, options) =>
      openStore(`${server!.url}?table=${namespace}&poolSize=4${deadline(options?.deadlineMs)}`),
    watchEvents: ['released'],
    pause: () => server!.pause(),
    resume: () => server?.resume(),
    restart: () => server!.restart(),
    unreachableUrl: (port, deadlineMs) =>
      `postgres://postgres:s3cret@127.0.0.1:${port}/postgres?connectTimeoutMs=${deadlineMs}`,
    teardown: async () => {
      await server?.stop();
      server = undefined;
    },
  };
}

/** The URL parameters that bound a call (and its connect) to `ms`. */
function deadline(ms: number | undefined): string {
  return ms === undefined ? '' : `&statementTimeoutMs=${ms}&connectTimeoutMs=${ms}`;
}
