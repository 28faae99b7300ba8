import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './ports.js';
import {
  processTree,
  signalTree,
  startProcess,
  stopProcess,
  tempDir,
  waitFor,
} from './processes.js';

const run = promisify(execFile);

/** Where Debian puts the PostgreSQL 15 server binaries. */
export const POSTGRES_BIN = process.env.LEASEHOLD_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** PostgreSQL refuses to run as root: the uid/gid to run it as, or `undefined` to stay as we are. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/** Why a private PostgreSQL cannot start here, or `null` when it can. */
export function postgresUnavailable(): string | null {
  for (const bin of ['initdb', 'postgres']) {
    if (!existsSync(join(POSTGRES_BIN, bin))) return `${join(POSTGRES_BIN, bin)} not found`;
  }
  try {
    serverUser();
  } catch {
    return 'running as root and there is no "postgres" user to run the server as';
  }
  return null;
}

/** Makes `path` the server user's, so initdb and postgres can write there. */
function giveToServer(path: string): void {
  const user = serverUser();
  if (user) chownSync(path, user.uid, user.gid);
}

/**
 * An initdb'd data folder shared by every server this machine starts for tests: initdb costs about
 * a second, a copy about 0.1 s. Built in a temp folder and renamed into place, so racing test
 * processes never see half of one.
 */
async function templateDataDir(): Promise<string> {
  const user = serverUser();
  const template = join(tmpdir(), `leasehold-pg15-icu-template-${process.getuid?.() ?? 'u'}`);
  if (existsSync(join(template, 'PG_VERSION'))) return template;
  const scratch = mkdtempSync(join(tmpdir(), 'leasehold-pg-initdb-'));
  giveToServer(scratch);
  const data = join(scratch, 'data');
  await run(
    join(POSTGRES_BIN, 'initdb'),
    [
      ...['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'],
      // A linguistic default collation (where 'a' < 'Z'), as most real databases have, so tests
      // show the store's byte order does not come from the database default.
      ...['--locale=C.UTF-8', '--locale-provider=icu', '--icu-locale=en-US'],
    ],
    { ...user },
  );
  try {
    renameSync(data, template);
  } catch (error) {
    if (!existsSync(join(template, 'PG_VERSION'))) throw error; // someone else won the race
  }
  rmSync(scratch, { recursive: true, force: true });
  return template;
}

/** The `-c` settings every server starts with unless `PostgresServerOptions.settings` says otherwise. */
const DEFAULT_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  listen_addresses: '127.0.0.1',
  fsync: 'off',
  full_page_writes: 'off',
  max_connections: '200',
  shared_buffers: '16MB',
});

/** How `PostgresServer.start` and `startStandby` set a server up; the defaults suit most tests. */
export interface PostgresServerOptions {
  /**
   * `-c` settings over the defaults (`fsync=off`, `full_page_writes=off`, …): a value replaces a
   * default, `null` leaves one out (a setting given on the command line cannot be changed by
   * `ALTER SYSTEM`, so leave out one a test flips that way).
   */
  readonly settings?: Readonly<Record<string, string | null>>;
}

/**
 * A private PostgreSQL 15 on a free 127.0.0.1 port in a temp folder, run as the `postgres` user
 * when we are root. `fsync=off` for speed; commits stay synchronous, so a SIGKILL of the server
 * (not of the machine) loses nothing that was acknowledged.
 */
export class PostgresServer {
  private child: ReturnType<typeof startProcess> | undefined;
  private readonly folder = tempDir('leasehold-pg-');
  private readonly settings: readonly string[];

  private constructor(
    public readonly port: number,
    options: PostgresServerOptions = {},
  ) {
    giveToServer(this.folder.path);
    this.settings = Object.entries({ ...DEFAULT_SETTINGS, ...options.settings }).flatMap(
      ([name, value]) => (value === null ? [] : ['-c', `${name}=${value}`]),
    );
  }

  static async start(options?: PostgresServerOptions): Promise<PostgresServer> {
    const template = await templateDataDir();
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const server = new PostgresServer(await freePort(), options);
      try {
        await run('cp', ['-a', template, server.dataDir], { ...serverUser() });
        await server.start();
        return server;
      } catch (error) {
        lastError = error;
        await server.stop();
      }
    }
    throw lastError;
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
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const server = new PostgresServer(await freePort(), { settings });
      try {
        await run(
          join(POSTGRES_BIN, 'pg_basebackup'),
          [
            ...['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres'],
            ...['-D', server.dataDir, '-R', '-X', 'stream', '-c', 'fast', '--no-sync'],
          ],
          { ...serverUser() },
        );
        await server.start();
        return server;
      } catch (error) {
        lastError = error;
        await server.stop();
      }
    }
    throw lastError;
  }

  get dataDir(): string {
    return join(this.folder.path, 'data');
  }

  /** A URL for the `postgres` superuser and database, without query parameters. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the server on its data folder and port, and waits until it answers a query. */
  async start(): Promise<void> {
    if (this.child) throw new Error('postgres is already running');
    const child = startProcess(
      join(POSTGRES_BIN, 'postgres'),
      [...['-D', this.dataDir, '-p', String(this.port), '-k', this.folder.path], ...this.settings],
      { ...serverUser() },
    );
    this.child = child;
    try {
      await waitFor(
        `postgres on port ${this.port}`,
        async () => {
          if (child.exitCode !== null || child.signalCode !== null) {
            throw new Error(`postgres exited early:\n${child.output()}`);
          }
          const client = new pg.Client({
            connectionString: this.url,
            connectionTimeoutMillis: 1000,
          });
          client.on('error', () => {});
          try {
            await client.connect();
            await client.query('SELECT 1');
            return true;
          } finally {
            await client.end().catch(() => {});
          }
        },
        20_000,
        25,
      );
    } catch (error) {
      this.child = undefined;
      await stopProcess(child, 'SIGKILL');
      throw error;
    }
  }

  /** Fast shutdown (SIGINT) and removal of the folder. */
  async stop(): Promise<void> {
    if (this.child) await stopProcess(this.child, 'SIGINT');
    this.child = undefined;
    this.folder.cleanup();
  }

  /** SIGKILL to every process of the server: a crash. The folder stays for `start`/`restart`. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const pids = child.pid ? processTree(child.pid) : [];
    for (const pid of pids) signal(pid, 'SIGKILL');
    await exited;
    // Backends are reparented when the postmaster dies; a new postmaster refuses to start while
    // any of them still holds the old shared memory.
    await waitFor('postgres backends to exit', () => pids.every((pid) => !isAlive(pid)), 5000);
  }

  /** Crash and start again on the same folder and port. */
  async restart(): Promise<void> {
    await this.kill();
    await this.start();
  }

  /** SIGSTOP to every process of the server: connections stay open, nothing answers. */
  pause(): void {
    if (this.child?.pid) signalTree(this.child.pid, 'SIGSTOP');
  }

  resume(): void {
    if (this.child?.pid) signalTree(this.child.pid, 'SIGCONT');
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/** Whether `pid` is a running process (a zombie waiting for its reaper counts as gone). */
function isAlive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
