import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { onPath } from './process-tree.js';
import { PrivateServer, type PrivateServerOptions, type ServerCommand } from './private-server.js';

/** Where Debian installs PostgreSQL's server programs, one folder per major version. */
const DEBIAN_PG = '/usr/lib/postgresql';

/**
 * The `-c` settings every server starts with unless `PrivatePostgresOptions.settings` says
 * otherwise. `fsync=off` for speed: commits stay synchronous, so a crash of the server (not of the
 * machine) loses nothing acknowledged.
 */
export const POSTGRES_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  listen_addresses: '127.0.0.1',
  fsync: 'off',
  full_page_writes: 'off',
  max_connections: '200',
  shared_buffers: '16MB',
});

/** How a `PrivatePostgres` starts. */
export interface PrivatePostgresOptions extends PrivateServerOptions {
  readonly port: number;
  /**
   * `-c` settings over `POSTGRES_SETTINGS`: a value replaces a default, `null` leaves one out (a
   * setting given on the command line cannot be changed by `ALTER SYSTEM`; leaving out `fsync`
   * and `full_page_writes` keeps PostgreSQL's durable defaults).
   */
  readonly settings?: Readonly<Record<string, string | null>>;
}

/**
 * The folder holding `initdb` and `postgres`: `LEASEHOLD_PG_BIN` when set, else Debian's newest
 * version, else the one on `PATH`; `undefined` when there is none.
 */
export function postgresBin(): string | undefined {
  const has = (dir: string): boolean =>
    existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'));
  const chosen = process.env.LEASEHOLD_PG_BIN;
  if (chosen) return has(chosen) ? chosen : undefined;
  if (existsSync(DEBIAN_PG)) {
    const versions = readdirSync(DEBIAN_PG)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (has(join(DEBIAN_PG, v, 'bin'))) return join(DEBIAN_PG, v, 'bin');
  }
  const initdb = onPath('initdb');
  return initdb && has(join(initdb, '..')) ? join(initdb, '..') : undefined;
}

/**
 * As root, the uid and gid of the `postgres` user to run the server as (PostgreSQL refuses to run
 * as root); `undefined` when we are not root. Throws when we are root and there is no such user.
 */
export function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string): number =>
    Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Why a private PostgreSQL cannot start here, or `null` when it can. */
export function postgresUnavailable(): string | null {
  if (!postgresBin())
    return 'the PostgreSQL server (initdb, postgres) is not installed (Debian package postgresql)';
  try {
    postgresUser();
  } catch {
    return 'running as root and there is no "postgres" user to run the server as';
  }
  return null;
}

/**
 * A private PostgreSQL on 127.0.0.1, its cluster in `dir/data` and its socket in `dir`, run as the
 * `postgres` user when we are root (the folder is given to that user; every parent folder must be
 * readable by it). Fill `dataDir` first: `initdb`, a copy of a template, or a base backup.
 */
export class PrivatePostgres extends PrivateServer {
  readonly program = 'postgres';
  protected override readonly stopSignal = 'SIGINT'; // fast shutdown
  readonly port: number;
  /** The folder of `initdb` and `postgres`. */
  readonly bin: string;
  /** The user the server runs as, when we are root. */
  readonly user: { uid: number; gid: number } | undefined;
  private readonly settings: readonly string[];

  /** Throws when PostgreSQL is not installed or, as root, there is no `postgres` user. */
  constructor(dir: string, options: PrivatePostgresOptions) {
    super(dir, options);
    const bin = postgresBin();
    if (!bin) throw new Error('the PostgreSQL server (initdb, postgres) is not installed');
    this.bin = bin;
    this.user = postgresUser();
    this.port = options.port;
    if (this.user) chownSync(dir, this.user.uid, this.user.gid);
    this.settings = Object.entries({ ...POSTGRES_SETTINGS, ...options.settings }).flatMap(
      ([name, value]) => (value === null ? [] : ['-c', `${name}=${value}`]),
    );
  }

  /** A URL for the `postgres` superuser and database, without query parameters. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  get dataDir(): string {
    return join(this.dir, 'data');
  }

  /** A fresh cluster in `dataDir`: trust authentication, UTF-8, no fsync while it is made. */
  async initdb(args: readonly string[] = ['--no-locale']): Promise<void> {
    await this.runAsServer(join(this.bin, 'initdb'), [
      ...['-D', this.dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'],
      ...args,
    ]);
  }

  /** A fresh cluster (`initdb --no-locale`) unless `dataDir` holds one already. */
  override async prepare(): Promise<void> {
    if (!existsSync(join(this.dataDir, 'PG_VERSION'))) await this.initdb();
  }

  /** Runs a helper program as the server's user, to its end (a copy, `pg_basebackup`). */
  async runAsServer(file: string, args: readonly string[]): Promise<string> {
    return this.runToEnd(file, [...args], { ...this.user });
  }

  protected command(): ServerCommand {
    return {
      file: join(this.bin, 'postgres'),
      args: [...['-D', this.dataDir, '-p', String(this.port), '-k', this.dir], ...this.settings],
      options: { ...this.user },
    };
  }

  protected isReady(output: string): boolean {
    // A standby says "ready to accept read-only connections".
    return /database system is ready to accept (read-only )?connections/.test(output);
  }
}
