import { CliFailure } from '../../output.js';
import { PrivateEtcd } from './etcd-server.js';
import { PrivatePostgres } from './postgres-server.js';
import type { PrivateServer } from './private-server.js';
import { freePort } from './process-tree.js';
import { PrivateRedis } from './redis-server.js';

export type { PrivateServer } from './private-server.js';

/** The stores verify can start a private server of, by scheme. */
const KINDS: Record<string, () => Promise<PrivateServer>> = {
  redis: async () => PrivateRedis.create(await freePort()),
  postgres: async () => PrivatePostgres.create(await freePort()),
  postgresql: async () => PrivatePostgres.create(await freePort()),
  etcd: async () => PrivateEtcd.create(await freePort(), await freePort()),
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
