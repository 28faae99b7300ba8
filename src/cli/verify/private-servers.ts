import { CliFailure } from '../output.js';
import { etcdUnavailable, PrivateEtcd } from '../harness/servers/etcd-server.js';
import { postgresBin, postgresUser, PrivatePostgres } from '../harness/servers/postgres-server.js';
import type { PrivateServer } from '../harness/servers/private-server.js';
import { freePort, serverFolder } from '../harness/servers/process-tree.js';
import { PrivateRedis, redisUnavailable } from '../harness/servers/redis-server.js';
import { startOnFreePort } from '../harness/servers/start-on-free-port.js';

export type { PrivateServer } from '../harness/servers/private-server.js';

/** How verify makes a private server of one kind on a given port, not yet started. */
type MakeServer = (port: number) => PrivateServer | Promise<PrivateServer>;

/**
 * verify's private redis-server. The append-only file with `appendfsync always` keeps every
 * acknowledged record across `store-restart`: a Redis without persistence comes back empty after a
 * crash, its tokens start again from 1, and verify rightly reports that as unsafe.
 */
function privateRedis(): MakeServer {
  if (redisUnavailable())
    throw new CliFailure(
      '--store redis: redis-server is not installed (on Debian: apt-get install redis-server)',
      2,
    );
  return (port) => new PrivateRedis(serverFolder('leasehold-verify-redis-'), { port, aof: true });
}

/**
 * verify's private PostgreSQL: a fresh cluster (initdb, in `prepare`), trust authentication on
 * 127.0.0.1 only, `fsync=off`; as root it runs as the `postgres` user.
 */
function privatePostgres(): MakeServer {
  if (!postgresBin())
    throw new CliFailure(
      '--store postgres: the PostgreSQL server (initdb, postgres) is not installed (on Debian: apt-get install postgresql)',
      2,
    );
  try {
    postgresUser();
  } catch {
    throw new CliFailure(
      '--store postgres: PostgreSQL refuses to run as root and there is no "postgres" user to run it as',
      2,
    );
  }
  return (port) => new PrivatePostgres(serverFolder('leasehold-verify-postgres-'), { port });
}

/**
 * verify's private one-member etcd. Its folder is on /dev/shm when there is one (etcd fsyncs every
 * write); a 10 ms heartbeat keeps its smallest lease TTL near 1.4 s.
 */
function privateEtcd(): MakeServer {
  if (etcdUnavailable())
    throw new CliFailure(
      '--store etcd: etcd is not installed (on Debian: apt-get install etcd-server)',
      2,
    );
  return async (clientPort) => {
    const peerPort = await freePort();
    const dir = serverFolder('leasehold-verify-etcd-', true);
    return new PrivateEtcd(dir, { name: 'verify', clientPort, peerPort });
  };
}

/** The stores verify can start a private server of, by scheme: each checks it can, first. */
const KINDS: Record<string, () => MakeServer> = {
  redis: privateRedis,
  postgres: privatePostgres,
  postgresql: privatePostgres,
  etcd: privateEtcd,
};

/** The schemes `--store` may name alone. */
export const PRIVATE_SERVER_SCHEMES = ['redis', 'postgres', 'etcd'] as const;

/**
 * The scheme of a `--store` that names a kind of server rather than one to connect to (`redis`,
 * `postgres:`), or `undefined` for a URL. A bare word verify cannot start is a usage error (exit 2).
 */
export function privateServerScheme(store: string): string | undefined {
  const match = /^([a-z][a-z0-9+.-]*):?$/i.exec(store);
  if (!match) return undefined;
  const scheme = match[1]!.toLowerCase();
  if (scheme in KINDS) return scheme;
  if (store.endsWith(':')) return undefined; // a URL with nothing after its scheme: opening it says why
  throw new CliFailure(
    `--store ${store}: verify starts a private server only for ${PRIVATE_SERVER_SCHEMES.join(', ')}; for another store give its URL (e.g. sqlite:/path/leases.db)`,
    2,
  );
}

/**
 * Starts a private server of the scheme's kind on a free 127.0.0.1 port, retrying on fresh ports
 * when one was taken meanwhile. `track` sees the server before it starts, so an interrupted start
 * still stops it; `interrupted` ends the retries. Throws a `CliFailure` (exit 2) when the server is not installed or will not start.
 */
export async function startPrivateServer(
  scheme: string,
  track: (server: PrivateServer | undefined) => void,
  interrupted: () => boolean,
): Promise<PrivateServer> {
  const kind = KINDS[scheme];
  if (!kind) throw new CliFailure(`--store ${scheme}: no private server of this kind`, 2);
  const make = kind();
  try {
    return await startOnFreePort(
      async (port) => {
        const server = await make(port);
        track(server);
        return server;
      },
      {
        start: async (server) => {
          await server.prepare();
          await server.launch();
        },
        discard: async (server) => {
          await server.stop();
          track(undefined);
        },
        retryAfter: () => !interrupted(),
      },
    );
  } catch (error) {
    throw new CliFailure(
      `could not start a private ${scheme} server: ${(error as Error).message}`,
      2,
    );
  }
}
