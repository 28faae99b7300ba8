// What each store's server is and how it is set up, for the results file: version and the
// settings that decide durability.
import { execFileSync } from 'node:child_process';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { Redis } from 'ioredis';
import { createRequire } from 'node:module';
import { fourLetter } from './private-servers.mjs';

const require = createRequire(import.meta.url);
const { fetch, AbortSignal } = globalThis;

export async function serverFacts(name, server) {
  try {
    return await FACTS[name](server);
  } catch (error) {
    return { error: String(error.message ?? error) };
  }
}

const FACTS = {
  nats: async (server) => {
    const varz = await (
      await fetch(`${server.monitoring}/varz`, { signal: AbortSignal.timeout(2000) })
    ).json();
    return {
      server: `nats-server ${varz.version}`,
      settings: 'JetStream file storage, one server',
    };
  },
  sqlite: async () => {
    const db = new Database(':memory:');
    const version = db.prepare('SELECT sqlite_version() AS v').get().v;
    db.close();
    return { server: `SQLite ${version}`, settings: 'WAL, synchronous=FULL (leasehold default)' };
  },
  postgres: async (server) => {
    const client = new pg.Client({ connectionString: server.base });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT version() AS v, current_setting('fsync') AS fsync,
                current_setting('synchronous_commit') AS sc, current_setting('full_page_writes') AS fpw`,
      );
      const r = rows[0];
      return {
        server: r.v.split(' on ')[0],
        settings: `fsync=${r.fsync}, synchronous_commit=${r.sc}, full_page_writes=${r.fpw}`,
      };
    } finally {
      await client.end();
    }
  },
  mysql: async (server) => {
    const c = await mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'root' });
    try {
      const [[v]] = await c.query(
        `SELECT VERSION() AS version, @@innodb_flush_log_at_trx_commit AS flush,
                @@innodb_doublewrite AS dw, @@log_bin AS binlog`,
      );
      return {
        server: `MariaDB ${v.version}`,
        settings: `innodb_flush_log_at_trx_commit=${v.flush}, doublewrite=${v.dw}, log_bin=${v.binlog}`,
      };
    } finally {
      await c.end();
    }
  },
  redis: async (server) => {
    const redis = new Redis(server.base);
    try {
      const info = await redis.info('server');
      return {
        server: `Redis ${/redis_version:(\S+)/.exec(info)[1]}`,
        settings: 'no persistence (save "", appendonly no)',
      };
    } finally {
      redis.disconnect();
    }
  },
  etcd: async (server) => {
    const response = await fetch(`http://${server.endpoint}/version`, {
      signal: AbortSignal.timeout(2000),
    });
    const version = (await response.json()).etcdserver;
    return { server: `etcd ${version}`, settings: 'one member, data on tmpfs, heartbeat 10 ms' };
  },
  s3: async () => {
    const version = execFileSync('radosgw', ['--version'], { encoding: 'utf8' });
    return {
      server: `radosgw ${/ceph version (\S+)/.exec(version)?.[1] ?? '?'}`,
      settings: 'one monitor, one memstore OSD (objects in memory), one replica',
    };
  },
  zookeeper: async (server) => {
    const srvr = await fourLetter(server.port, 'srvr');
    return {
      server: `ZooKeeper ${/^Zookeeper version: ([^-,\s]+)/m.exec(srvr)?.[1] ?? '?'}`,
      settings: 'standalone, data on tmpfs, tickTime 200 ms',
    };
  },
  dynamodb: async () => ({
    server: `dynalite ${require('dynalite/package.json').version}`,
    settings: 'in memory, its own process',
  }),
};
