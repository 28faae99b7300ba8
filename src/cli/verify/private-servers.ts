import { CliFailure } from '../output.js';
import { etcdUnavailable, PrivateEtcd } from '../harness/servers/etcd-server.js';
import { postgresBin, postgresUser, PrivatePostgres } from '../harness/servers/postgres-server.js';
import type { PrivateServer } from '../harness/servers/private-server.js';
import { freePort, serverFolder } from '../harness/servers/process-tree.js';
import { PrivateRedis, redisUnavailable } from '../harness/servers/redis-server.js';

export type { PrivateServer } from '../harness/servers/private-server.js';

/**
 * verify's private redis-server. The append-only file with `appendfsync always` keeps every
 * acknowledged record across `store-restart`: a Redis without persistence comes back empty after a
 * crash, its tokens start again from 1, and verify rightly reports that as unsafe.
 */
async function privateRedis(): Promise<PrivateServer> {
  if (redisUnavailable())
    throw new CliFailure(
      '--store redis: redis-server is not installed (on Debian: apt-get install redis-server)',
      2,
    );
  const port = await freePort();
  return new PrivateRedis(serverFolder('leasehold-verify-redis-'), { port, aof: true });
}

/**
 * verify's private PostgreSQL: a fresh cluster (initdb, in `prepare`), trust authentication on
 * 127.0.0.1 only, `fsync=off`; as root it runs as the `postgres` user.
 */
async function privatePostgres(): Promise<PrivateServer> {
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
  const port = await freePort();
  return new PrivatePostgres(serverFolder('leasehold-verify-postgres-'), { port });
}

/**
 * verify's private one-member etcd. Its folder is on /dev/shm when there is one (etcd fsyncs every
 * write); a 10 ms heartbeat keeps its smallest lease TTL near 1.4 s.
 */
async function privateEtcd(): Promise<PrivateServer> {
  if (etcdUnavailable())
    throw new CliFailure(
      '--store etcd: etcd is not installed (on Debian: apt-get install etcd-server)',
      2,
    );
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const dir = serverFolder('leasehold-verify-etcd-', true);
  return new PrivateEtcd(dir, { name: 'verify', clientPort, peerPort });
}

/** The stores verify can start a private server of, by scheme. */
const KINDS: Record<string, () => Promise<PrivateServer>> = {
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
  const create = KINDS[scheme];
  if (!create) throw new CliFailure(`--store ${scheme}: no private server of this kind`, 2);
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const server = await create();
    track(server);
    try {
      await server.prepare();
      await server.launch();
      return server;
    } catch (error) {
      lastError = error;
      await server.stop();
      track(undefined);
      if (interrupted()) break;
    }
  }
  throw new CliFailure(
    `could not start a private ${scheme} server: ${(lastError as Error).message}`,
    2,
  );
}
