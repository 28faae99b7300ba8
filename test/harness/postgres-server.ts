import { existsSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  PrivatePostgres,
  type PrivatePostgresOptions,
} from '../../src/cli/harness/servers/postgres-server.js';
import { serverFolder } from '../../src/cli/harness/servers/process-tree.js';
import { startOnFreePort } from '../../src/cli/harness/servers/start-on-free-port.js';

export { postgresUnavailable } from '../../src/cli/harness/servers/postgres-server.js';

/**
 * An initdb'd data folder shared by every server this machine starts for tests: initdb costs about
 * a second, a copy about 0.1 s. Made by `PrivatePostgres.initdb` in a folder of its own and renamed
 * into place, so racing test processes never see half of one.
 */
async function templateDataDir(): Promise<string> {
  const template = join(tmpdir(), `leasehold-pg15-icu-template-${process.getuid?.() ?? 'u'}`);
  if (existsSync(join(template, 'PG_VERSION'))) return template;
  // Never started: only its initdb runs, as the server's user, in its own folder.
  const scratch = new PrivatePostgres(serverFolder('leasehold-pg-initdb-'), {
    port: 0,
    watchdog: false,
    detached: false,
  });
  try {
    // A linguistic default collation (where 'a' < 'Z'), as most real databases have, so tests
    // show the store's byte order does not come from the database default.
    await scratch.initdb(['--locale=C.UTF-8', '--locale-provider=icu', '--icu-locale=en-US']);
    try {
      renameSync(scratch.dataDir, template);
    } catch (error) {
      if (!existsSync(join(template, 'PG_VERSION'))) throw error; // someone else won the race
    }
  } finally {
    await scratch.stop(); // removes its folder
  }
  return template;
}

/** How `PostgresServer.start` and `startStandby` set a server up; the defaults suit most tests. */
export type PostgresServerOptions = Pick<PrivatePostgresOptions, 'settings'>;

/**
 * A private PostgreSQL 15 on a free 127.0.0.1 port in a temp folder (`PrivatePostgres`), run as
 * the `postgres` user when we are root. `fsync=off` for speed; commits stay synchronous, so a
 * SIGKILL of the server (not of the machine) loses nothing that was acknowledged.
 */
export class PostgresServer extends PrivatePostgres {
  private constructor(port: number, options: PostgresServerOptions = {}) {
    super(serverFolder('leasehold-pg-'), { ...options, port, watchdog: false, detached: false });
  }

  static async start(options?: PostgresServerOptions): Promise<PostgresServer> {
    const template = await templateDataDir();
    return startOnFreePort((port) => new PostgresServer(port, options), {
      start: async (server) => {
        await server.runAsServer('cp', ['-a', template, server.dataDir]);
        await server.start();
      },
      discard: (server) => server.stop(),
    });
  }

  /**
   * A streaming standby of `primary` (which must be running): `pg_basebackup -R` over 127.0.0.1
   * into a folder of its own, started on another free port. It connects as `name` (its
   * `cluster_name`, which its walreceiver reports as `application_name`), so `primary` can list it
   * in `synchronous_standby_names`. Resolves once it answers queries; it streams soon after.
   */
  static async startStandby(
    primary: PostgresServer,
    name = 'standby',
    options: PostgresServerOptions = {},
  ): Promise<PostgresServer> {
    const settings = { cluster_name: name, ...options.settings };
    return startOnFreePort((port) => new PostgresServer(port, { settings }), {
      start: async (server) => {
        await server.runAsServer(join(server.bin, 'pg_basebackup'), [
          ...['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres'],
          ...['-D', server.dataDir, '-R', '-X', 'stream', '-c', 'fast', '--no-sync'],
        ]);
        await server.start();
      },
      discard: (server) => server.stop(),
    });
  }

  /** Starts the server on its data folder and port, and waits until it accepts connections. */
  async start(): Promise<void> {
    if (this.running) throw new Error('postgres is already running');
    await this.launch(20_000);
  }
}
