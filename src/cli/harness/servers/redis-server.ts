import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

/**
 * Why `redis-server` cannot run here, or `null` when it can; with `cli`, `redis-cli` too (for a
 * caller that sends the servers commands with it).
 */
export function redisUnavailable({ cli = false }: { cli?: boolean } = {}): string | null {
  for (const program of cli ? ['redis-server', 'redis-cli'] : ['redis-server'])
    if (!onPath(program)) return `${program} not found on PATH`;
  return null;
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

/** How a `PrivateSentinel` starts. */
export interface PrivateSentinelOptions extends PrivateServerOptions {
  /** The port to listen on. */
  readonly port: number;
  /** The address to listen on. @default '127.0.0.1' */
  readonly bind?: string;
  /** The address it gives the other Sentinels for itself (a lab host's). @default none */
  readonly announceIp?: string;
  /** The master group it watches: its name, the primary's address, the Sentinels that must agree. */
  readonly master: {
    readonly name: string;
    readonly host: string;
    readonly port: number;
    readonly quorum: number;
  };
  /** How long the primary goes unanswered before this Sentinel calls it down. @default 1000 */
  readonly downAfterMs?: number;
  /** How long a failover may take before another is tried. @default 3000 */
  readonly failoverTimeoutMs?: number;
}

/**
 * A private Redis Sentinel (`redis-server sentinel.conf --sentinel`) watching one master group.
 * Its configuration file is written in its folder on the first start and rewritten by the
 * Sentinel itself as it learns of replicas, other Sentinels and failovers, so a restart keeps
 * what it knew.
 */
export class PrivateSentinel extends PrivateServer {
  readonly program = 'redis-server';
  readonly port: number;

  constructor(
    dir: string,
    private readonly options: PrivateSentinelOptions,
  ) {
    super(dir, options);
    this.port = options.port;
  }

  get url(): string {
    const { bind = '127.0.0.1', master } = this.options;
    return `redis://${bind}:${this.port}?sentinel=${master.name}`;
  }

  protected command(): ServerCommand {
    const {
      bind = '127.0.0.1',
      announceIp,
      master,
      downAfterMs = 1000,
      failoverTimeoutMs = 3000,
    } = this.options;
    const file = join(this.dir, 'sentinel.conf');
    if (!existsSync(file)) {
      const { name } = master;
      writeFileSync(
        file,
        [
          `port ${this.port}`,
          `bind ${bind}`,
          'protected-mode no',
          ...(announceIp ? [`sentinel announce-ip ${announceIp}`] : []),
          `dir ${this.dir}`,
          `sentinel monitor ${name} ${master.host} ${master.port} ${master.quorum}`,
          `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
          `sentinel failover-timeout ${name} ${failoverTimeoutMs}`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
    }
    return {
      file: onPath('redis-server') ?? 'redis-server',
      args: [file, '--sentinel', '--daemonize', 'no', '--logfile', ''],
    };
  }

  protected isReady(output: string): boolean {
    return output.includes('+monitor master');
  }
}
