// One private server per store for a whole `npm run bench`, and how to name a fresh namespace on
// it: every section (and every size within one) gets its own file, table or key prefix, so it
// starts from empty records without restarting the server. PostgreSQL and MariaDB run durable as
// shipped; etcd and ZooKeeper keep their data on tmpfs; dynalite runs in a child process; S3 is a
// one-OSD Ceph whose radosgw serves one bucket, a key prefix per namespace.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { URLSearchParams } from 'node:url';
import {
  CEPH_S3_USER,
  startCeph,
  startDynalite,
  startEtcd,
  startMariadb,
  startNats,
  startPostgres,
  startRedis,
  startZookeeper,
} from './private-servers.mjs';
import { tempDir } from './processes.mjs';
import { serverFacts } from './server-facts.mjs';

export const STORE_NAMES = [
  'sqlite',
  'postgres',
  'mysql',
  'redis',
  'etcd',
  'dynamodb',
  'nats',
  's3',
  'zookeeper',
];

const require = createRequire(import.meta.url);
/** The one bucket of the S3 runs (made by the first store that opens it); a prefix per namespace. */
export const S3_BUCKET = 'leasehold-bench';
// The SDK warns once per process that its releases after 2026 need Node 22; the version is pinned.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** The npm package each store's leasehold adapter (and its bare compare-and-set) drives. */
export const DRIVERS = {
  sqlite: 'better-sqlite3',
  postgres: 'pg',
  mysql: 'mysql2',
  redis: 'ioredis',
  etcd: 'etcd3',
  dynamodb: '@aws-sdk/client-dynamodb',
  nats: '@nats-io/transport-node',
  s3: '@aws-sdk/client-s3',
  zookeeper: 'node-zookeeper-client',
};

/** The installed version of an npm package (read from its folder: not every one exports it). */
export function packageVersion(name) {
  try {
    const main = require.resolve(name);
    const dir = main.slice(
      0,
      main.lastIndexOf(`node_modules/${name}/`) + `node_modules/${name}/`.length,
    );
    return JSON.parse(readFileSync(`${dir}package.json`, 'utf8')).version.replace(/^v/, '');
  } catch {
    return null;
  }
}

/**
 * Starts `name`'s server. Answers `{ name, url(tag), pid, endpoint?, port?, stop() }`: `url(tag)`
 * opens a namespace of its own (`tag`: letters, digits and `_`), `pid` is the server process (for
 * its CPU time; several for Ceph's daemons), `null` for SQLite, which has none.
 */
export async function startServer(name) {
  const server = await launch(name);
  return { name, ...server, facts: () => serverFacts(name, server) };
}

async function launch(name) {
  switch (name) {
    case 'sqlite': {
      const dir = tempDir('leasehold-bench-sqlite-');
      return {
        dir: dir.path,
        url: (tag) => `sqlite:${join(dir.path, `${tag}.db`)}`,
        pid: null,
        stop: dir.remove,
      };
    }
    case 'postgres': {
      const s = await startPostgres({ durable: true, maxConnections: 300 });
      return { ...s, base: s.url, url: (tag) => `${s.url}?table=${tag}` };
    }
    case 'mysql': {
      const s = await startMariadb({ maxConnections: 300 });
      return { ...s, base: s.url, url: (tag) => `${s.url}?table=${tag}` };
    }
    case 'redis': {
      const s = await startRedis();
      const port = Number(new URL(s.url).port);
      return { ...s, port, base: s.url, url: (tag) => `${s.url}?prefix=${tag}:` };
    }
    case 'etcd': {
      const s = await startEtcd();
      return { ...s, base: s.url, url: (tag) => `${s.url}?prefix=/${tag}/` };
    }
    case 'dynamodb': {
      const s = await startDynalite();
      const endpoint = encodeURIComponent(s.endpoint);
      return {
        ...s,
        // The table is made by the first store that opens it (the coordinator, before any child).
        url: (tag) =>
          `dynamodb://bench_${tag}?endpoint=${endpoint}&region=us-east-1&createTable=true`,
      };
    }
    case 'nats': {
      const s = await startNats();
      return { ...s, base: s.url, url: (tag) => `${s.url}?bucket=${tag}` };
    }
    case 's3': {
      const s = await startCeph();
      const user = `${CEPH_S3_USER.accessKeyId}:${CEPH_S3_USER.secretAccessKey}`;
      const query = new URLSearchParams({
        region: 'us-east-1',
        endpoint: s.endpoint,
        forcePathStyle: 'true',
        createBucket: 'true',
      });
      return { ...s, url: (tag) => `s3://${user}@${S3_BUCKET}/${tag}/?${query}` };
    }
    case 'zookeeper': {
      const s = await startZookeeper();
      return { ...s, url: (tag) => `zookeeper://${s.endpoint}/bench_${tag}` };
    }
    default:
      throw new Error(`unknown store "${name}"; known: ${STORE_NAMES.join(', ')}`);
  }
}
