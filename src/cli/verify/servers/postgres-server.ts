import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliFailure } from '../../output.js';
import { onPath } from './process-tree.js';
import { PrivateServer, type ServerCommand } from './private-server.js';

/** Where Debian installs PostgreSQL's server programs, one folder per major version. */
const DEBIAN_PG = '/usr/lib/postgresql';

/**
 * verify's private PostgreSQL: a fresh cluster (initdb) in a temporary folder, trust authentication
 * on 127.0.0.1 only. PostgreSQL refuses to run as root, so as root it runs as the `postgres` user.
 * `fsync=off` for speed: commits stay synchronous, so a crash of the server (not of the machine)
 * loses nothing acknowledged.
 */
export class PrivatePostgres extends PrivateServer {
  readonly program = 'postgres';
  protected override readonly stopSignal = 'SIGINT'; // fast shutdown

  private constructor(
    private readonly bin: string,
    private readonly user: { uid: number; gid: number } | undefined,
    readonly port: number,
  ) {
    super(mkdtempSync(join(tmpdir(), 'leasehold-verify-postgres-')));
    if (user) chownSync(this.dir, user.uid, user.gid);
  }

  /** Throws a `CliFailure` (exit 2) when PostgreSQL is not installed or has no user to run as. */
  static create(port: number): PrivatePostgres {
    const bin = serverBin();
    if (!bin)
      throw new CliFailure(
        '--store postgres: the PostgreSQL server (initdb, postgres) is not installed (on Debian: apt-get install postgresql)',
        2,
      );
    return new PrivatePostgres(bin, serverUser(), port);
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  override async prepare(): Promise<void> {
    await this.runToEnd(
      join(this.bin, 'initdb'),
      ['-D', this.data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync'],
      { ...this.user },
    );
  }

  protected command(): ServerCommand {
    return {
      file: join(this.bin, 'postgres'),
      args: [
        ...['-D', this.data, '-p', String(this.port), '-k', this.dir],
        ...['-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'full_page_writes=off'],
        ...['-c', 'max_connections=200', '-c', 'shared_buffers=16MB'],
      ],
      options: { ...this.user },
    };
  }

  protected isReady(output: string): boolean {
    return output.includes('database system is ready to accept connections');
  }

  private get data(): string {
    return join(this.dir, 'data');
  }
}

/** The folder holding `initdb` and `postgres`: Debian's newest version, else `PATH`. */
function serverBin(): string | undefined {
  const has = (dir: string): boolean =>
    existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'));
  if (existsSync(DEBIAN_PG)) {
    const versions = readdirSync(DEBIAN_PG)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (has(join(DEBIAN_PG, v, 'bin'))) return join(DEBIAN_PG, v, 'bin');
  }
  const initdb = onPath('initdb');
  return initdb && has(join(initdb, '..')) ? join(initdb, '..') : undefined;
}

/** As root, the uid and gid of the `postgres` user to run the server as; else run as we are. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const id = (flag: string): number =>
      Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    throw new CliFailure(
      '--store postgres: PostgreSQL refuses to run as root and there is no "postgres" user to run it as',
      2,
    );
  }
}
