import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  PrivateRedis,
  PrivateSentinel,
  redisUnavailable as redisProgramsUnavailable,
  type PrivateRedisOptions,
} from '../../src/cli/harness/servers/redis-server.js';
import { freePort, serverFolder } from '../../src/cli/harness/servers/process-tree.js';
import { startOnFreePort } from '../../src/cli/harness/servers/start-on-free-port.js';
import { tempDir, waitFor } from './processes.js';

const run = promisify(execFile);

/** One `redis-cli` command against the server on 127.0.0.1:`port`: its output, trimmed. */
async function cliAt(port: number, args: readonly string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args]);
  return stdout.trim();
}

/** Why the harness's Redis cannot run here (it sends `redis-cli` commands too), or `null`. */
export const redisUnavailable = (): string | null => redisProgramsUnavailable({ cli: true });

export type RedisServerOptions = Omit<PrivateRedisOptions, 'port'> & {
  /** Folder for data and config; a fresh temp folder when omitted (removed by `stop`). */
  dir?: string;
};

/** A private redis-server on a free 127.0.0.1 port (`PrivateRedis`, with the test lifecycle). */
export class RedisServer extends PrivateRedis {
  private constructor(port: number, options: RedisServerOptions) {
    const own = options.dir === undefined;
    super(options.dir ?? serverFolder('leasehold-redis-'), {
      ...options,
      port,
      ownsDir: own,
      watchdog: false,
      detached: false,
    });
  }

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    return startOnFreePort(
      (port) => {
        if (options.dir) mkdirSync(options.dir, { recursive: true });
        return new RedisServer(port, options);
      },
      { start: (server) => server.launch(), discard: (server) => server.stop() },
    );
  }

  /** Runs one `redis-cli` command against this server and returns its output. */
  cli(...args: string[]): Promise<string> {
    return cliAt(this.port, args);
  }
}

/** Three Redis Cluster masters on loopback ports, no replicas. */
export class RedisCluster {
  private constructor(
    readonly nodes: RedisServer[],
    private readonly dir: ReturnType<typeof tempDir>,
  ) {}

  static async start(): Promise<RedisCluster> {
    const dir = tempDir('leasehold-redis-cluster-');
    const nodes: RedisServer[] = [];
    try {
      for (let i = 0; i < 3; i++)
        nodes.push(await RedisServer.start({ cluster: true, dir: join(dir.path, `n${i}`) }));
      const cluster = new RedisCluster(nodes, dir);
      await run('redis-cli', [
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-yes',
      ]);
      await waitFor('cluster_state:ok on every node', async () => {
        const infos = await Promise.all(nodes.map((n) => n.cli('cluster', 'info')));
        return infos.every((info) => info.includes('cluster_state:ok'));
      });
      return cluster;
    } catch (error) {
      await Promise.allSettled(nodes.map((n) => n.stop()));
      dir.cleanup();
      throw error;
    }
  }

  /** `host:port` of every node, for `?cluster=` in a store URL. */
  get seeds(): string[] {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`);
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.nodes.map((n) => n.stop()));
    this.dir.cleanup();
  }
}

/** A Redis Sentinel on a free 127.0.0.1 port (`PrivateSentinel`, with the test lifecycle). */
export class SentinelServer extends PrivateSentinel {
  static async start(dir: string, master: { name: string; port: number }): Promise<SentinelServer> {
    mkdirSync(dir, { recursive: true });
    const server = new SentinelServer(dir, {
      port: await freePort(),
      master: { name: master.name, host: '127.0.0.1', port: master.port, quorum: 2 },
      ownsDir: false,
      watchdog: false,
      detached: false,
    });
    await server.launch();
    return server;
  }

  /** Runs one `redis-cli` command against this Sentinel and returns its output. */
  cli(...args: string[]): Promise<string> {
    return cliAt(this.port, args);
  }
}

/**
 * A primary, its replica and three Sentinels watching them as master group `name` (quorum 2),
 * on loopback ports: what a store URL with `sentinel=` finds its primary through.
 */
export class RedisSentinels {
  private constructor(
    readonly name: string,
    readonly primary: RedisServer,
    readonly replica: RedisServer,
    readonly sentinels: SentinelServer[],
    private readonly dir: ReturnType<typeof tempDir>,
  ) {}

  static async start(name = 'leasehold'): Promise<RedisSentinels> {
    const dir = tempDir('leasehold-redis-sentinel-');
    const servers: { stop(): Promise<void> }[] = [];
    try {
      const primary = await RedisServer.start({ aof: true, dir: join(dir.path, 'primary') });
      servers.push(primary);
      const replica = await RedisServer.start({
        aof: true,
        replicaOf: primary.port,
        dir: join(dir.path, 'replica'),
      });
      servers.push(replica);
      const sentinels: SentinelServer[] = [];
      for (let i = 0; i < 3; i++) {
        const sentinel = await SentinelServer.start(join(dir.path, `s${i}`), {
          name,
          port: primary.port,
        });
        servers.push(sentinel);
        sentinels.push(sentinel);
      }
      const set = new RedisSentinels(name, primary, replica, sentinels, dir);
      await waitFor('every Sentinel to know the replica and the other two', async () => {
        for (const sentinel of sentinels) {
          const info = await sentinel.cli('sentinel', 'master', name);
          if (!/num-slaves\n1\n/.test(info) || !/num-other-sentinels\n2\n/.test(info)) return false;
        }
        return (await replica.cli('info', 'replication')).includes('master_link_status:up');
      });
      return set;
    } catch (error) {
      await Promise.allSettled(servers.map((s) => s.stop()));
      dir.cleanup();
      throw error;
    }
  }

  /** The store URL: the first Sentinel's address, the others in `sentinels=`. */
  get url(): string {
    const [first, ...rest] = this.sentinels.map((s) => `127.0.0.1:${s.port}`);
    return `redis://${first}?sentinel=${this.name}&sentinels=${rest.join(',')}`;
  }

  /** The port of the primary as the first Sentinel names it. */
  async primaryPort(): Promise<number> {
    const answer = await this.sentinels[0]!.cli('sentinel', 'get-master-addr-by-name', this.name);
    return Number(answer.split('\n')[1]);
  }

  async stop(): Promise<void> {
    await Promise.allSettled([this.primary, this.replica, ...this.sentinels].map((s) => s.stop()));
    this.dir.cleanup();
  }
}
