import { onPath } from './process-tree.js';
import { PrivateServer, type PrivateServerOptions, type ServerCommand } from './private-server.js';

/** How a `PrivateRedis` starts. */
export interface PrivateRedisOptions extends PrivateServerOptions {
  /** The 127.0.0.1 port to listen on. */
  readonly port: number;
  /**
   * The append-only file with `appendfsync always`: every acknowledged write survives a kill and
   * restart. Without it a restart after a crash comes back empty. @default false
   */
  readonly aof?: boolean;
  /** A Redis Cluster node (`--cluster-enabled yes`, its config in `nodes.conf`). @default false */
  readonly cluster?: boolean;
  /** A replica of the server on this 127.0.0.1 port. */
  readonly replicaOf?: number;
  /** More server flags, after the defaults (which they override): `['--requirepass', 'pw']`. */
  readonly args?: readonly string[];
}

/** Why `redis-server` cannot run here, or `null` when it can. */
export function redisUnavailable(): string | null {
  return onPath('redis-server') ? null : 'redis-server not found on PATH';
}

/**
 * A private redis-server on 127.0.0.1, its files in its folder, no RDB snapshots; persistent
 * with `aof`.
 */
export class PrivateRedis extends PrivateServer {
  readonly program = 'redis-server';
  readonly port: number;

  constructor(
    dir: string,
    private readonly options: PrivateRedisOptions,
  ) {
    super(dir, options);
    this.port = options.port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  protected command(): ServerCommand {
    const { aof = false, cluster = false, replicaOf, args = [] } = this.options;
    return {
      file: onPath('redis-server') ?? 'redis-server',
      args: [
        ...['--port', String(this.port), '--bind', '127.0.0.1', '--protected-mode', 'no'],
        ...['--dir', this.dir, '--save', '', '--daemonize', 'no', '--logfile', ''],
        ...['--appendonly', aof ? 'yes' : 'no', '--appendfsync', 'always'],
        // A replica syncs at once instead of after 5 s.
        ...['--repl-diskless-sync-delay', '0'],
        ...(replicaOf === undefined ? [] : ['--replicaof', '127.0.0.1', String(replicaOf)]),
        ...(cluster ? ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'] : []),
        ...args,
      ],
    };
  }

  protected isReady(output: string): boolean {
    return output.includes('Ready to accept connections');
  }
}
