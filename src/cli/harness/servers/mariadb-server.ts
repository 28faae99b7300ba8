import { existsSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { onPath } from './process-tree.js';
import { PrivateServer, type PrivateServerOptions, type ServerCommand } from './private-server.js';

/** Where Debian installs MariaDB's programs, searched before `PATH`. */
const SEARCH_PATH = ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin'];

/** The path of a MariaDB program, or `undefined` when it is not installed. */
export function mariadbBinary(name: string): string | undefined {
  return SEARCH_PATH.map((dir) => join(dir, name)).find((path) => existsSync(path)) ?? onPath(name);
}

/** Why a private MariaDB cannot start here, or `null` when the programs are installed. */
export function mariadbUnavailable(): string | null {
  const missing = ['mariadbd', 'mariadb-install-db'].filter((name) => !mariadbBinary(name));
  return missing.length === 0
    ? null
    : `${missing.join(' and ')} not found (install the mariadb-server package)`;
}

/** How a `PrivateMariadb` starts. */
export interface PrivateMariadbOptions extends PrivateServerOptions {
  readonly port: number;
  /**
   * More `mariadbd` options, after the essentials, which they override (the last one given wins):
   * `['--innodb-flush-log-at-trx-commit=2']`.
   */
  readonly args?: readonly string[];
}

/**
 * A private MariaDB on 127.0.0.1, its data in `dir/data`, run with `--user=root` (required when
 * running as root); root has no password over TCP. Fill `dataDir` first (`installDb`, or a copy).
 * Ready once it greets a client: it does that only when it accepts queries.
 */
export class PrivateMariadb extends PrivateServer {
  readonly program = 'mariadbd';
  readonly port: number;

  constructor(
    dir: string,
    private readonly options: PrivateMariadbOptions,
  ) {
    super(dir, options);
    this.port = options.port;
  }

  /** `mysql://root@127.0.0.1:PORT`; add the database and parameters. */
  get url(): string {
    return `mysql://root@127.0.0.1:${this.port}`;
  }

  get dataDir(): string {
    return join(this.dir, 'data');
  }

  /** The server's error log (`--log-error`). */
  get errorLog(): string {
    return join(this.dir, 'err.log');
  }

  /** A fresh data folder (`mariadb-install-db`), with root authenticated by password (none). */
  async installDb(args: readonly string[] = []): Promise<void> {
    await this.runToEnd(mariadbBinary('mariadb-install-db') ?? 'mariadb-install-db', [
      ...installDbArgs(this.dataDir),
      ...args,
    ]);
  }

  protected command(): ServerCommand {
    return {
      file: mariadbBinary('mariadbd') ?? 'mariadbd',
      args: [
        '--no-defaults',
        `--datadir=${this.dataDir}`,
        '--user=root',
        '--bind-address=127.0.0.1',
        `--port=${this.port}`,
        `--socket=${join(this.dir, 'sock')}`,
        `--pid-file=${join(this.dir, 'pid')}`,
        `--log-error=${this.errorLog}`,
        '--skip-name-resolve',
        ...(this.options.args ?? []),
      ],
    };
  }

  /** The tail of the error log, for a message about a server that would not start. */
  errorLogTail(): string {
    return existsSync(this.errorLog) ? readFileSync(this.errorLog, 'utf8').slice(-2000) : '';
  }

  protected isReady(): Promise<boolean> {
    return greets(this.port);
  }
}

/** `mariadb-install-db`'s arguments for a fresh data folder at `data`. */
export function installDbArgs(data: string): string[] {
  return [
    '--no-defaults',
    `--datadir=${data}`,
    '--user=root',
    '--auth-root-authentication-method=normal',
    '--skip-test-db',
  ];
}

/**
 * Whether the server has finished starting: it sends its handshake greeting (protocol 10) only
 * once it accepts connections, and an init file has run before it listens.
 */
function greets(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    // Packet header (4 bytes) then protocol version 10; an error packet (0xff) means "not yet".
    socket.once('data', (chunk) => done(chunk.length > 4 && chunk[4] === 10));
  });
}
