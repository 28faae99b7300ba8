import pg from 'pg';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import { RedisServer, redisUnavailable } from '../harness/redis-server.js';
import { READER_PLACEHOLDERS } from './reader-globals.js';

// The servers an example marked <!-- needs: … --> runs against: private ones the docs test starts
// once (only when such examples exist), each example on a database of its own, the URLs the
// example shows (`postgres://…`, `redis://127.0.0.1:6379`) replaced by the private server's.

export const SERVERS = ['postgres', 'redis'] as const;
export type Server = (typeof SERVERS)[number];

/** A server's URLs in an example's text, as far as they reach (up to a space or a quote). */
const URLS: Record<Server, RegExp> = {
  postgres: /\bpostgres(?:ql)?:\/\/[^\s'"`]*/g,
  redis: /\brediss?:\/\/[^\s'"`]*/g,
};

/** The reader's names (reader-globals.ts) that stand for a connection to the server. */
const NAMES: Record<Server, readonly string[]> = { postgres: ['pool'], redis: [] };

/** Whether `text` uses `server`: one of its URLs, or a reader's name that connects to it. */
export function usesServer(text: string, server: Server): boolean {
  return (
    new RegExp(URLS[server].source).test(text) ||
    NAMES[server].some((name) => new RegExp(`(?<![.\\w])${name}\\b`).test(text))
  );
}

/** `text` with every URL of a server in `urls` replaced by that URL. */
export function withServerUrls(text: string, urls: Partial<Record<Server, string>>): string {
  let out = text;
  for (const server of SERVERS) {
    const url = urls[server];
    if (url !== undefined) out = out.replace(URLS[server], url);
  }
  return out;
}

/** Why one of `servers` cannot start here, or `null`. */
export function serversUnavailable(servers: ReadonlySet<Server>): string | null {
  return (
    (servers.has('postgres') ? postgresUnavailable() : null) ??
    (servers.has('redis') ? redisUnavailable() : null)
  );
}

/** The private servers of one run of the docs test. */
export class DocServers {
  private databases = 0;

  private constructor(
    private readonly postgres: PostgresServer | undefined,
    private readonly redis: RedisServer | undefined,
  ) {}

  /**
   * Starts `servers`, side by side. PostgreSQL runs with its durable defaults (fsync on): the
   * examples show a database `leasehold doctor` finds nothing wrong with.
   */
  static async start(servers: ReadonlySet<Server>): Promise<DocServers> {
    const [postgres, redis] = await Promise.allSettled([
      servers.has('postgres')
        ? PostgresServer.start({ settings: { fsync: null, full_page_writes: null } })
        : undefined,
      servers.has('redis') ? RedisServer.start() : undefined,
    ]);
    const started = new DocServers(
      postgres.status === 'fulfilled' ? postgres.value : undefined,
      redis.status === 'fulfilled' ? redis.value : undefined,
    );
    const failed = [postgres, redis].find((r) => r.status === 'rejected');
    if (failed) {
      await started.stop();
      throw failed.reason;
    }
    return started;
  }

  /**
   * URLs for one example: a fresh PostgreSQL database (so examples running side by side never
   * meet), and the Redis server.
   */
  async urlsFor(servers: readonly Server[]): Promise<Partial<Record<Server, string>>> {
    const urls: Partial<Record<Server, string>> = {};
    if (servers.includes('postgres')) {
      const name = `docs_${++this.databases}`;
      await this.query(this.postgresUrl('postgres'), `CREATE DATABASE ${name}`);
      urls.postgres = this.postgresUrl(name);
    }
    if (servers.includes('redis')) urls.redis = this.redis!.url;
    return urls;
  }

  /** Runs `sql` on the database at `url`; its rows. */
  async query(url: string, sql: string): Promise<Record<string, unknown>[]> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(sql)).rows as Record<string, unknown>[];
    } finally {
      await client.end();
    }
  }

  /** Makes the tables of the writes `text` leaves to the reader, in its database at `urls`. */
  async prepareReaderWrites(urls: Partial<Record<Server, string>>, text: string): Promise<void> {
    for (const p of READER_PLACEHOLDERS.filter((p) => text.includes(p.text)))
      await this.query(urls.postgres!, p.table);
  }

  /** What is wrong with the writes `text` leaves to the reader, once it ran: each must have landed. */
  async readerWritesLanded(
    urls: Partial<Record<Server, string>>,
    text: string,
  ): Promise<string | undefined> {
    for (const p of READER_PLACEHOLDERS.filter((p) => text.includes(p.text))) {
      const [row] = await this.query(urls.postgres!, p.landed);
      const wanted = text.split(p.text).length - 1;
      if (row?.n !== wanted)
        return `${String(row?.n)} of ${wanted} writes in place of ${p.text} landed`;
    }
    return undefined;
  }

  async stop(): Promise<void> {
    await Promise.allSettled([this.postgres?.stop(), this.redis?.stop()]);
  }

  private postgresUrl(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.postgres!.port}/${database}`;
  }
}

/**
 * The servers of `servers`, started now (none when empty) while the caller goes on: `started()`
 * waits for them (and fails as the start did), `stop()` stops whatever started.
 */
export function lazyServers(servers: ReadonlySet<Server>): {
  started(): Promise<DocServers>;
  stop(): Promise<void>;
} {
  const starting =
    servers.size === 0
      ? undefined
      : DocServers.start(servers).then(
          (started) => ({ started }),
          (error: unknown) => ({ error }),
        );
  return {
    async started() {
      const outcome = await starting;
      if (!outcome) throw new Error('no server was asked for');
      if ('error' in outcome) throw outcome.error;
      return outcome.started;
    },
    async stop() {
      const outcome = await starting;
      if (outcome && 'started' in outcome) await outcome.started.stop();
    },
  };
}
