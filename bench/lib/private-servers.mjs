// The benchmarks' private servers, started by leasehold's own starters (dist/cli/harness/servers,
// the ones the tests and `leasehold verify` use) with the settings the benchmarks measure:
// PostgreSQL and MariaDB durable as shipped, etcd and ZooKeeper on tmpfs, Redis without
// persistence, dynalite in a process of its own. Each answers `{ …, pid, stop }`, `stop`
// synchronous (SIGKILL of the server's tree, removal of its folder), and is stopped by the
// cleanup list on every way out of the run.
import mysql from 'mysql2/promise';
import { PrivateCeph } from '../../dist/cli/harness/servers/ceph-server.js';
import { PrivateDynalite } from '../../dist/cli/harness/servers/dynalite-server.js';
import { PrivateEtcd } from '../../dist/cli/harness/servers/etcd-server.js';
import { PrivateMariadb } from '../../dist/cli/harness/servers/mariadb-server.js';
import { PrivateNats } from '../../dist/cli/harness/servers/nats-server.js';
import { PrivatePostgres } from '../../dist/cli/harness/servers/postgres-server.js';
import { freePort, serverFolder } from '../../dist/cli/harness/servers/process-tree.js';
import { PrivateRedis } from '../../dist/cli/harness/servers/redis-server.js';
import { startOnFreePort } from '../../dist/cli/harness/servers/start-on-free-port.js';
import { PrivateZookeeper } from '../../dist/cli/harness/servers/zookeeper-server.js';
import { onCleanup } from './processes.mjs';

export { fourLetter } from '../../dist/cli/harness/servers/zookeeper-server.js';

/** The database of the MariaDB runs. */
export const DATABASE = 'bench';

/** The S3 user every private Ceph of the benchmarks gets. */
export const CEPH_S3_USER = Object.freeze({
  accessKeyId: 'leasehold-bench',
  secretAccessKey: 'leasehold-bench-secret',
});

/** The run owns the server: its processes and folder, no watchdog, no process group of its own. */
const OWNED = { watchdog: false, detached: false };

/**
 * `null` while the server runs, else its last lines of output: a server that dies during a run
 * (out of memory, a crash) is reported as such, not taken for a slow store.
 */
function died(server) {
  if (server.running) return null;
  return server.output().trim().split('\n').slice(-5).join('\n') || '(no output)';
}

/**
 * Starts `make(port)`'s server on a free port, three tries (the port can be taken between the
 * probe and the bind), with `prepare` run once before each start. Answers the server and its
 * synchronous `stop`, registered with the run's cleanup list.
 */
async function start(make, prepare = async () => {}) {
  return startOnFreePort(
    async (port) => {
      const server = await make(port);
      return { server, stop: onCleanup(() => server.killNow()), died: () => died(server) };
    },
    {
      start: async ({ server }) => {
        await prepare(server);
        await server.launch();
      },
      discard: ({ stop }) => stop(),
    },
  );
}

/**
 * PostgreSQL with room for `maxConnections` clients (a fleet of pools plus one LISTEN connection
 * per worker). fsync off by default: we measure the lease logic, not this machine's disk;
 * `durable: true` keeps the shipped settings (fsync, full_page_writes). `LEASEHOLD_BENCH_PG_LOG`
 * names a file for the server's log, with lock waits and slow statements.
 */
export async function startPostgres({ maxConnections = 200, durable = false } = {}) {
  const logFile = process.env.LEASEHOLD_BENCH_PG_LOG;
  const settings = {
    max_connections: String(maxConnections),
    shared_buffers: '64MB',
    ...(durable ? { fsync: null, full_page_writes: null } : {}),
    ...(logFile ? { log_lock_waits: 'on', log_min_duration_statement: '1000' } : {}),
  };
  const { server, stop, died } = await start(
    (port) =>
      new PrivatePostgres(serverFolder('leasehold-bench-pg-'), {
        ...OWNED,
        port,
        settings,
        outputFile: logFile,
      }),
    (s) => s.initdb([]),
  );
  return { url: server.url, pid: server.pid, stop, died };
}

/**
 * MariaDB durable as shipped (innodb_flush_log_at_trx_commit=1, doublewrite on, no binary log),
 * with one database `bench`; root with no password over TCP.
 */
export async function startMariadb({ maxConnections = 200 } = {}) {
  const { server, stop, died } = await start(
    (port) =>
      new PrivateMariadb(serverFolder('leasehold-bench-mariadb-'), {
        ...OWNED,
        port,
        args: [`--max-connections=${maxConnections}`],
      }),
    (s) => s.installDb(),
  );
  const c = await mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'root' });
  try {
    await c.query(`CREATE DATABASE IF NOT EXISTS ${DATABASE}`);
  } finally {
    await c.end();
  }
  return { port: server.port, url: `${server.url}/${DATABASE}`, pid: server.pid, stop, died };
}

/** redis-server without persistence. */
export async function startRedis() {
  const { server, stop, died } = await start(
    (port) => new PrivateRedis(serverFolder('leasehold-bench-redis-'), { ...OWNED, port }),
  );
  return { url: server.url, pid: server.pid, stop, died };
}

/** One etcd member, its data on tmpfs, heartbeat 10 ms and election timeout 100 ms. */
export async function startEtcd() {
  const { server, stop, died } = await start(
    async (clientPort) =>
      new PrivateEtcd(serverFolder('leasehold-bench-etcd-', true), {
        ...OWNED,
        name: 'n1',
        clientPort,
        peerPort: await freePort(),
      }),
  );
  return { endpoint: server.endpoint, url: server.url, pid: server.pid, stop, died };
}

/** nats-server with JetStream, its store in a temp folder, ports picked by the server. */
export async function startNats() {
  const { server, stop, died } = await start(
    () => new PrivateNats(serverFolder('leasehold-bench-nats-'), OWNED),
  );
  const { url, port, monitorUrl: monitoring, pid } = server;
  return { url, port, monitoring, pid, stop, died };
}

/**
 * Standalone ZooKeeper, its data on tmpfs, writes synced (`forceSync=yes`, its default). `heapMb`:
 * the JVM's heap (the starter's 128 MiB unless given; the fleet runs need more).
 */
export async function startZookeeper({ heapMb } = {}) {
  const { server, stop, died } = await start(
    (clientPort) =>
      new PrivateZookeeper(serverFolder('leasehold-bench-zk-', true), {
        ...OWNED,
        clientPort,
        forceSync: true,
        heapMb,
      }),
  );
  return { endpoint: server.endpoint, port: server.port, pid: server.pid, stop, died };
}

/** dynalite in its own process, so its work neither shares the run's loop nor its CPU time. */
export async function startDynalite() {
  const { server, stop, died } = await start(
    (port) => new PrivateDynalite(serverFolder('leasehold-bench-dynalite-'), { ...OWNED, port }),
  );
  return { endpoint: server.endpoint, pid: server.pid, stop, died };
}

/**
 * A one-OSD Ceph whose radosgw serves S3 (the only S3 server here that honours If-None-Match and
 * If-Match on PUT). `pid`: radosgw, the OSD and the monitor, where a request's CPU time is spent.
 */
export async function startCeph() {
  const ceph = await PrivateCeph.start(CEPH_S3_USER);
  const stop = onCleanup(() => ceph.killNow());
  return { endpoint: ceph.endpoint, pid: ceph.pids, stop };
}
