import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { onPath } from './process-tree.js';
import { PrivateServer, type PrivateServerOptions, type ServerCommand } from './private-server.js';

/** How a `PrivateEtcd` starts: one member, alone or in a cluster. */
export interface PrivateEtcdOptions extends PrivateServerOptions {
  /** The member's name. @default 'm0' */
  readonly name?: string;
  readonly clientPort: number;
  readonly peerPort: number;
  /** The address it listens on. @default '127.0.0.1' */
  readonly host?: string;
  /**
   * `--initial-cluster`: every member as `name=http://host:peerPort`, joined by commas.
   * @default this member alone
   */
  readonly initialCluster?: string;
  /**
   * `--initial-cluster-token`, the same for every member of one cluster and for no other cluster
   * (the cluster's folder, say). @default the member's folder
   */
  readonly clusterToken?: string;
  /**
   * Raft heartbeat in ms; the election timeout is ten of them. Short timings make failover fast
   * and lower the server's minimum lease TTL (1.5 election timeouts, rounded up to whole seconds:
   * about 1.4 s with 10 ms). @default 10
   */
  readonly heartbeatMs?: number;
  /**
   * etcd's `--strict-reconfig-check`; `false` lets a membership change happen right after start.
   * @default etcd's own (true)
   */
  readonly strictReconfigCheck?: boolean;
}

/** Why `etcd` cannot run here, or `null` when it can. */
export function etcdUnavailable(): string | null {
  return onPath('etcd') ? null : 'etcd not found on PATH (Debian package etcd-server)';
}

/**
 * A private etcd member on 127.0.0.1 (or `host`), its data in `dir/data` (put the folder on /dev/shm:
 * etcd fsyncs every write). Ready when its `/health` says so, which needs a quorum.
 */
export class PrivateEtcd extends PrivateServer {
  readonly program = 'etcd';
  readonly name: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly host: string;

  constructor(
    dir: string,
    private readonly options: PrivateEtcdOptions,
  ) {
    super(dir, options);
    this.name = options.name ?? 'm0';
    this.clientPort = options.clientPort;
    this.peerPort = options.peerPort;
    this.host = options.host ?? '127.0.0.1';
    mkdirSync(this.dataDir, { recursive: true });
  }

  get port(): number {
    return this.clientPort;
  }

  /** `host:port` of its client endpoint. */
  get endpoint(): string {
    return `${this.host}:${this.clientPort}`;
  }

  get url(): string {
    return `etcd://${this.endpoint}`;
  }

  get dataDir(): string {
    return join(this.dir, 'data');
  }

  protected command(): ServerCommand {
    const client = `http://${this.host}:${this.clientPort}`;
    const peer = `http://${this.host}:${this.peerPort}`;
    const heartbeat = this.options.heartbeatMs ?? 10;
    return {
      file: onPath('etcd') ?? 'etcd',
      args: [
        ...['--name', this.name, '--data-dir', this.dataDir],
        ...['--listen-client-urls', client, '--advertise-client-urls', client],
        ...['--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer],
        ...['--initial-cluster', this.options.initialCluster ?? `${this.name}=${peer}`],
        ...['--initial-cluster-state', 'new'],
        ...['--initial-cluster-token', this.options.clusterToken ?? this.dir],
        ...[
          '--heartbeat-interval',
          String(heartbeat),
          '--election-timeout',
          String(heartbeat * 10),
        ],
        ...['--logger', 'zap', '--log-outputs', 'stderr', '--log-level', 'warn'],
        ...(this.options.strictReconfigCheck === false ? ['--strict-reconfig-check=false'] : []),
      ],
    };
  }

  protected async isReady(): Promise<boolean> {
    const response = await fetch(`http://${this.endpoint}/health`, {
      signal: AbortSignal.timeout(500),
    });
    return ((await response.json()) as { health?: string }).health === 'true';
  }
}
