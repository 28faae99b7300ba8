// One private server per store for the whole run; each scale gets its own table, key prefix or
// file, so a run starts from empty records without restarting the server.
import { join } from 'node:path';
import {
  startEtcd,
  startNats,
  startPostgres,
  startRedis,
  startZookeeper,
} from './private-servers.mjs';
import { tempDir } from './processes.mjs';

export const STORES = ['sqlite', 'redis', 'postgres', 'etcd', 'zookeeper', 'nats'];

/** Starts the store's server; `maxWorkers` sizes PostgreSQL's connection limit. */
export async function startStore(name, { maxWorkers }) {
  if (name === 'sqlite') {
    const dir = tempDir('leasehold-bench-sqlite-');
    const urlFor = (tag) => `sqlite://${join(dir.path, `${tag}.db`)}`;
    return { urlFor, coordinatorUrlFor: urlFor, stop: dir.remove };
  }
  if (name === 'redis') {
    const server = await startRedis();
    return {
      urlFor: (tag) => `${server.url}?prefix=${tag}:`,
      // The coordinator's full scans must not fail on a server the fleet keeps busy.
      coordinatorUrlFor: (tag) => `${server.url}?prefix=${tag}:&commandTimeoutMs=60000`,
      stop: server.stop,
      died: server.died,
    };
  }
  if (name === 'postgres') {
    // Each worker: a pool of up to 10 (the default) plus one LISTEN connection; then the coordinator.
    const server = await startPostgres({ maxConnections: (maxWorkers + 2) * 12 + 20 });
    return {
      urlFor: (tag) => `${server.url}?table=${tag}`,
      coordinatorUrlFor: (tag) =>
        `${server.url}?table=${tag}&statementTimeoutMs=60000&connectTimeoutMs=60000&notify=false`,
      stop: server.stop,
      died: server.died,
    };
  }
  if (name === 'etcd') {
    const server = await startEtcd();
    return {
      urlFor: (tag) => `${server.url}?prefix=${tag}/`,
      coordinatorUrlFor: (tag) => `${server.url}?prefix=${tag}/&timeoutMs=60000`,
      stop: server.stop,
      died: server.died,
    };
  }
  if (name === 'zookeeper') {
    // ZooKeeper's own scripts start it with 1,000 MB; the tests' 128 MB is too little for a
    // fleet whose every member lists 10,000 records and more.
    const server = await startZookeeper({ heapMb: 1024 });
    return {
      urlFor: (tag) => `zookeeper://${server.endpoint}/${tag}`,
      coordinatorUrlFor: (tag) => `zookeeper://${server.endpoint}/${tag}?timeoutMs=60000`,
      stop: server.stop,
      died: server.died,
    };
  }
  if (name === 'nats') {
    const server = await startNats();
    // A bucket name: letters, digits, - and _.
    const bucket = (tag) => tag.replace(/[^A-Za-z0-9_-]/g, '_');
    return {
      urlFor: (tag) => `${server.url}?bucket=${bucket(tag)}`,
      coordinatorUrlFor: (tag) => `${server.url}?bucket=${bucket(tag)}&timeoutMs=60000`,
      stop: server.stop,
      died: server.died,
    };
  }
  throw new Error(`unknown store "${name}"; known: ${STORES.join(', ')}`);
}
