import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';
import { ServerProcess } from './server-process.js';
import { startProcess, stopProcess, tempDir, waitFor } from './processes.js';

const run = promisify(execFile);

/** Whether `redis-server` and `redis-cli` can run here; the reason when they cannot. */
export function redisUnavailable(): string | null {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    execFileSync('redis-cli', ['--version'], { stdio: 'ignore' });
    return null;
  } catch {
    return 'redis-server / redis-cli not found on PATH';
  }
}

export interface RedisServerOptions {
  /** Append-only file with `appendfsync always`: records survive kill and restart. @default false */
  aof?: boolean;
  /** Start as a Redis Cluster node (`--cluster-enabled yes`). @default false */
  cluster?: boolean;
  /** Start as a replica of the server on this 127.0.0.1 port. */
  replicaOf?: number;
  /** Folder for data and config; a fresh temp folder when omitted (removed by `stop`). */
  dir?: string;
  /** More server flags, after the defaults (which they override): `['--requirepass', 'pw']`. */
  args?: readonly string[];
}

/** A private redis-server on a free 127.0.0.1 port. */
export class RedisServer extends ServerProcess {
  private readonly ownDir: ReturnType<typeof tempDir> | undefined;
  readonly dir: string;

  private constructor(
    public port: number,
    private readonly options: RedisServerOptions,
  ) {
    super();
    if (options.dir) {
      this.dir = options.dir;
      mkdirSync(this.dir, { recursive: true });
    } else {
      this.ownDir = tempDir('leasehold-redis-');
      this.dir = this.ownDir.path;
    }
  }

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const server = new RedisServer(await freePort(), options);
      try {
        await server.launch();
        return server;
      } catch (error) {
        lastError = error;
        await server.stop();
      }
    }
    throw lastError;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Stops the server (SIGTERM, SIGKILL after a grace period) and removes its own temp folder. */
  async stop(): Promise<void> {
    if (this.child) await stopProcess(this.child);
    this.child = undefined;
    this.ownDir?.cleanup();
  }

  /** Runs one `redis-cli` command against this server and returns its output. */
  async cli(...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', [
      '-h',
      '127.0.0.1',
      '-p',
      String(this.port),
      ...args,
    ]);
    return stdout.trim();
  }

  async launch(): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      this.dir,
      '--save',
      '',
      '--appendonly',
      this.options.aof ? 'yes' : 'no',
      '--appendfsync',
      'always',
      '--protected-mode',
      'no',
      '--repl-diskless-sync-delay',
      '0', // a replica syncs at once instead of after 5 s
    ];
    if (this.options.replicaOf !== undefined) {
      args.push('--replicaof', '127.0.0.1', String(this.options.replicaOf));
    }
    if (this.options.cluster) {
      args.push('--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf');
    }
    args.push(...(this.options.args ?? []));
    const child = startProcess('redis-server', args);
    this.child = child;
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code, signal) =>
        reject(
          new Error(`redis-server exited (${code ?? signal}) during start:\n${child.output()}`),
        ),
      ),
    );
    exited.catch(() => {});
    await Promise.race([
      waitFor(`redis-server on port ${this.port}`, () =>
        child.output().includes('Ready to accept connections'),
      ),
      exited,
    ]);
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
