import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import {
  installDbArgs,
  mariadbBinary,
  mariadbUnavailable,
  PrivateMariadb,
} from '../../src/cli/harness/servers/mariadb-server.js';
import { serverFolder } from '../../src/cli/harness/servers/process-tree.js';
import { startOnFreePort } from '../../src/cli/harness/servers/start-on-free-port.js';
import { waitFor } from './processes.js';

/** The database every private server creates at startup. */
export const MARIADB_DATABASE = 'leasehold';

export { mariadbUnavailable };

/** A private MariaDB on a free 127.0.0.1 port with its data in a temp folder. */
export interface MariadbServer {
  readonly port: number;
  readonly dir: string;
  /** `mysql://root@127.0.0.1:PORT/leasehold` plus `params`. */
  url(params?: Record<string, string | number>): string;
  /** Graceful shutdown (SIGTERM); data stays for `start`. */
  stop(): Promise<void>;
  /** SIGKILL, like a crash; committed data stays on disk. */
  kill(): Promise<void>;
  /** Starts again on the same folder and port and waits until it accepts queries. */
  start(): Promise<void>;
  /** `kill` (or `stop` when `graceful`) then `start`. */
  restart(graceful?: boolean): Promise<void>;
  /** SIGSTOP: connections stay open, nothing answers. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** Stops the server and removes its folder. */
  dispose(): Promise<void>;
}

const INNODB_SIZES = ['--innodb-buffer-pool-size=16M', '--innodb-log-file-size=8M'];

/**
 * A freshly initialised data folder to copy, made once per MariaDB version and kept in the temp
 * dir: `mariadb-install-db` takes seconds here, a copy a fraction of one. Built in a private
 * folder and renamed into place, so concurrent test processes never see half of one.
 */
function dataTemplate(): string {
  const version = /Ver\s+(\S+)/.exec(
    execFileSync(mariadbBinary('mariadbd')!, ['--version'], { encoding: 'utf8' }),
  )?.[1];
  const path = join(tmpdir(), `leasehold-mariadb-template-${(version ?? 'x').replace(/\W/g, '_')}`);
  if (existsSync(path)) return path;
  const staging = mkdtempSync(`${path}.tmp-`);
  try {
    execFileSync(
      mariadbBinary('mariadb-install-db')!,
      [...installDbArgs(join(staging, 'data')), ...INNODB_SIZES],
      { stdio: 'pipe' },
    );
    renameSync(staging, path);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(path)) throw error; // another process won the race otherwise
  }
  return path;
}

/** How `startMariadb` sets a server up beyond the defaults every test server has. */
export interface MariadbOptions {
  /** Binary logging into the server's folder (`--log-bin`), as a replication primary needs. */
  readonly logBin?: boolean;
  /** `--server-id`: each server of a replication setup needs its own. */
  readonly serverId?: number;
  /**
   * More `mariadbd` options, after the defaults, which they override (the last one given wins):
   * `['--innodb-flush-log-at-trx-commit=1']`.
   */
  readonly args?: readonly string[];
}

/** Copies an initialised data folder and starts the server on it, on a free port. */
export async function startMariadb(options: MariadbOptions = {}): Promise<MariadbServer> {
  const reason = mariadbUnavailable();
  if (reason) throw new Error(reason);
  const template = dataTemplate();
  return startOnFreePort((port) => handle(prepared(template, port, options)), {
    start: (server) => server.start(),
    discard: (server) => server.dispose(),
    // A free port may be taken between the probe and the bind: only then try another one.
    retryAfter: (error) => /bind|address already in use/i.test(String(error)),
  });
}

/** A server on `port` in a fresh folder holding a copy of `template`, not started. */
function prepared(template: string, port: number, options: MariadbOptions): PrivateMariadb {
  const dir = serverFolder('leasehold-mariadb-');
  const initFile = join(dir, 'init.sql');
  writeFileSync(initFile, `CREATE DATABASE IF NOT EXISTS ${MARIADB_DATABASE};\n`);
  cpSync(join(template, 'data'), join(dir, 'data'), { recursive: true });
  const args = [
    `--init-file=${initFile}`,
    ...INNODB_SIZES,
    // Commits reach the OS at once, so they survive SIGKILL of the server, but nothing waits for
    // the disk: tests never crash the machine. One tablespace makes CREATE TABLE cheap.
    '--innodb-flush-log-at-trx-commit=2',
    '--innodb-flush-method=nosync',
    '--innodb-doublewrite=0',
    '--innodb-file-per-table=0',
    '--performance-schema=OFF',
    ...(options.logBin ? [`--log-bin=${join(dir, 'binlog')}`] : []),
    ...(options.serverId === undefined ? [] : [`--server-id=${options.serverId}`]),
    ...(options.args ?? []),
  ];
  return new PrivateMariadb(dir, { port, args, watchdog: false, detached: false });
}

/** The test handle of a private MariaDB. */
function handle(mariadb: PrivateMariadb): MariadbServer {
  let paused = false;
  const server: MariadbServer = {
    port: mariadb.port,
    dir: mariadb.dir,
    url: (params = {}) => {
      const query = new URLSearchParams(
        Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]),
      ).toString();
      return `${mariadb.url}/${MARIADB_DATABASE}${query ? `?${query}` : ''}`;
    },
    async start() {
      if (mariadb.running) return;
      paused = false;
      try {
        await mariadb.launch(30_000);
      } catch (error) {
        throw new Error(`${(error as Error).message}\n${mariadb.errorLogTail()}`, { cause: error });
      }
    },
    async stop() {
      await mariadb.shutdown(15_000);
      paused = false;
    },
    async kill() {
      await mariadb.kill();
      paused = false;
    },
    async restart(graceful = false) {
      await (graceful ? server.stop() : server.kill());
      await server.start();
    },
    pause() {
      if (mariadb.running && !paused) {
        mariadb.pause();
        paused = true;
      }
    },
    resume() {
      if (mariadb.running && paused) {
        mariadb.resume();
        paused = false;
      }
    },
    async dispose() {
      await mariadb.kill();
      await mariadb.stop();
    },
  };
  return server;
}

/**
 * Makes `replica` replicate from `primary` (started with `logBin`, each with its own `serverId`)
 * over 127.0.0.1 as root, and waits until both say so: the replica's IO and SQL threads run and the
 * primary lists it among its replicas.
 */
export async function replicate(replica: MariadbServer, primary: MariadbServer): Promise<void> {
  const connection = await mysql.createConnection({ uri: replica.url() });
  const source = await mysql.createConnection({ uri: primary.url() });
  try {
    await connection.query(
      `CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = ${primary.port}, MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_CONNECT_RETRY = 1`,
    );
    await connection.query('START SLAVE');
    await waitFor(
      `MariaDB on port ${replica.port} to replicate from port ${primary.port}`,
      async () => {
        const [status] = await connection.query('SHOW SLAVE STATUS');
        const [row] = status as { Slave_IO_Running?: string; Slave_SQL_Running?: string }[];
        if (row?.Slave_IO_Running !== 'Yes' || row.Slave_SQL_Running !== 'Yes') return false;
        const [hosts] = await source.query('SHOW SLAVE HOSTS');
        return (hosts as { Port: number }[]).some((host) => host.Port === replica.port);
      },
    );
  } finally {
    await Promise.allSettled([connection.end(), source.end()]);
  }
}
