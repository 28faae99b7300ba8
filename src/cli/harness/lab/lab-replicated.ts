import { execFile } from 'node:child_process';
import { appendFileSync, chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PrivatePostgres, postgresUnavailable } from '../servers/postgres-server.js';
import { PrivateRedis, redisUnavailable } from '../servers/redis-server.js';
import type { LabHost, NetLab } from './netlab.js';

const run = promisify(execFile);

export { postgresUnavailable, redisUnavailable };

/** A store of one primary and one replica whose clients dial the lab's service address. */
export interface PrimaryReplica {
  readonly primary: { readonly name: string; readonly host: LabHost; readonly server: Server };
  readonly replica: { readonly name: string; readonly host: LabHost; readonly server: Server };
  readonly url: string;
  /** Makes the replica a primary (what Sentinel or an operator does on failover). */
  promote(): Promise<void>;
}

type Server = PrivateRedis | PrivatePostgres;

/**
 * Redis: a primary and a replica, each on a host of its own, both with the append-only file
 * fsynced at every write (so a restart keeps what each had); replication is Redis's own,
 * asynchronous. Clients dial the service address, which is on the primary's host.
 */
export async function startLabRedis(lab: NetLab, dir: string): Promise<PrimaryReplica> {
  const [a, b] = [lab.addHost('redis-1'), lab.addHost('redis-2')];
  for (const name of ['r1', 'r2']) mkdirSync(join(dir, name));
  const common = ['--bind', '0.0.0.0', '--port', '6379'];
  const primary = new PrivateRedis(join(dir, 'r1'), {
    port: 6379,
    aof: true,
    args: common,
    wrap: lab.wrap(a),
  });
  const replica = new PrivateRedis(join(dir, 'r2'), {
    port: 6379,
    aof: true,
    args: [...common, '--replicaof', a.ip, '6379'],
    wrap: lab.wrap(b),
  });
  lab.moveServiceAddress(a);
  await primary.launch(30_000);
  await replica.launch(30_000);
  await untilReplicaSyncs(b.ip);
  return {
    primary: { name: 'redis r1', host: a, server: primary },
    replica: { name: 'redis r2', host: b, server: replica },
    url: `redis://${lab.serviceIp}:6379`,
    async promote() {
      await run('redis-cli', ['-h', b.ip, 'replicaof', 'no', 'one']);
    },
  };
}

/**
 * PostgreSQL: a primary and a streaming standby made by `pg_basebackup`, each on a host of its
 * own, durable settings (fsync on), trust authentication on the lab's network. `synchronous`
 * makes every commit wait for the standby (`synchronous_standby_names = '*'`); otherwise
 * replication is asynchronous, PostgreSQL's default. Clients dial the service address.
 */
export async function startLabPostgres(
  lab: NetLab,
  dir: string,
  synchronous: boolean,
): Promise<PrimaryReplica> {
  const [a, b] = [lab.addHost('pg-1'), lab.addHost('pg-2')];
  chmodSync(dir, 0o755); // the postgres user goes through it to its own folders
  for (const name of ['p1', 'p2']) mkdirSync(join(dir, name));
  const settings = {
    listen_addresses: '*',
    fsync: null,
    full_page_writes: null,
  };
  const asPostgres = ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups'];
  const primary = new LabPostgres(join(dir, 'p1'), {
    port: 5432,
    settings,
    wrap: [...lab.wrap(a), ...asPostgres],
  });
  const standby = new LabPostgres(join(dir, 'p2'), {
    port: 5432,
    settings,
    wrap: [...lab.wrap(b), ...asPostgres],
  });
  lab.moveServiceAddress(a);
  await primary.initdb();
  const subnet = `${a.ip.split('.').slice(0, 3).join('.')}.0/24`;
  appendFileSync(
    join(primary.dataDir, 'pg_hba.conf'),
    `host all all ${subnet} trust\nhost replication all ${subnet} trust\n`,
  );
  // In the configuration file, not on the command line, so that a promoted standby (which copies
  // the file) can be told to stop waiting for a standby it no longer has.
  if (synchronous)
    appendFileSync(join(primary.dataDir, 'postgresql.conf'), "synchronous_standby_names = '*'\n");
  await primary.launch(30_000);
  await standby.runAsServer(join(standby.bin, 'pg_basebackup'), [
    ...['-h', a.ip, '-p', '5432', '-U', 'postgres', '-D', standby.dataDir, '-R', '-X', 'stream'],
  ]);
  await standby.launch(30_000);
  // Streaming, and with synchronous replication counted as synchronous: a standby still catching
  // up is reported `async` meanwhile (and the doctor, run next, would say so).
  const state = synchronous ? 'streaming|sync' : 'streaming|async';
  await until(async () => {
    const { stdout } = await psql(a.ip, 'select state, sync_state from pg_stat_replication');
    return stdout.trim() === state;
  }, 'the PostgreSQL standby to stream');
  return {
    primary: { name: 'postgres p1', host: a, server: primary },
    replica: { name: 'postgres p2', host: b, server: standby },
    url: `postgres://postgres@${lab.serviceIp}:5432/postgres`,
    async promote() {
      await psql(b.ip, 'select pg_promote()');
      // Alone now: as a failover manager does, it stops waiting for a synchronous standby.
      if (synchronous) {
        await psql(b.ip, "alter system set synchronous_standby_names = ''");
        await psql(b.ip, 'select pg_reload_conf()');
      }
    },
  };
}

function psql(host: string, sql: string): Promise<{ stdout: string }> {
  return run('psql', ['-h', host, '-U', 'postgres', '-d', 'postgres', '-At', '-c', sql], {
    timeout: 10_000,
  });
}

/**
 * A PostgreSQL on a lab host: its wrap already enters the host's namespace and drops to the
 * `postgres` user (entering a namespace needs root, so the user changes after it, not before).
 */
class LabPostgres extends PrivatePostgres {
  override async runAsServer(file: string, args: readonly string[]): Promise<string> {
    return this.runToEnd(file, [...args]);
  }

  protected override command(): ReturnType<PrivatePostgres['command']> {
    const { file, args } = super.command();
    return { file, args };
  }
}

/** Waits until the Redis replica at `ip` reports its link to the primary up. */
export function untilReplicaSyncs(ip: string): Promise<void> {
  return until(async () => {
    const { stdout } = await run('redis-cli', ['-h', ip, 'info', 'replication']);
    return /master_link_status:up/.test(stdout);
  }, 'the Redis replica to sync');
}

/** Polls `check` every 100 ms until it holds; fails naming `what` after `timeoutMs`. */
export async function until(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
