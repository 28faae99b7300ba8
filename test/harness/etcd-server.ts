import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { ServerProcess } from './server-process.js';
import { startProcess, stopProcess, waitFor } from './processes.js';

/** Whether the `etcd` binary can run here; the reason when it cannot. */
export function etcdUnavailable(): string | null {
  try {
    execFileSync('etcd', ['--version'], { stdio: 'ignore' });
    return null;
  } catch {
    return 'etcd not found on PATH (Debian package etcd-server)';
  }
}

export interface EtcdClusterOptions {
  /** Members. @default 1 */
  size?: number;
  /**
   * Raft heartbeat in ms; the election timeout is ten of them. Short timings make failover fast
   * and lower the server's minimum lease TTL (1.5 election timeouts, rounded up to whole seconds).
   * @default 10 for one member, 25 for a cluster (three members share two cores here)
   */
  heartbeatMs?: number;
  /**
   * etcd's `--strict-reconfig-check`: refuse a membership change unless every member has been
   * connected for 5 s and the change keeps a quorum of started members. `false` lets a test change
   * the membership right after start. @default etcd's own (true)
   */
  strictReconfigCheck?: boolean;
}

/** One etcd process: a member of an `EtcdCluster`. */
export class EtcdMember extends ServerProcess {
  constructor(
    readonly name: string,
    readonly clientPort: number,
    readonly peerPort: number,
    private readonly args: readonly string[],
  ) {
    super();
  }

  /** `127.0.0.1:port` of its client endpoint. */
  get endpoint(): string {
    return `127.0.0.1:${this.clientPort}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Starts the process; with `wait`, until it reports itself healthy (which needs a quorum). */
  async launch(wait = true): Promise<void> {
    const child = startProcess('etcd', [...this.args]);
    this.child = child;
    if (wait) await this.healthy();
  }

  async healthy(): Promise<void> {
    const child = this.child;
    if (!child) throw new Error(`etcd ${this.name} is not running`);
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code, signal) =>
        reject(
          new Error(
            `etcd ${this.name} exited (${code ?? signal}) during start:\n${child.output()}`,
          ),
        ),
      ),
    );
    exited.catch(() => {});
    await Promise.race([
      waitFor(`etcd ${this.name} on port ${this.clientPort} to be healthy`, async () => {
        const response = await fetch(`http://${this.endpoint}/health`, {
          signal: AbortSignal.timeout(500),
        });
        return ((await response.json()) as { health?: string }).health === 'true';
      }),
      exited,
    ]);
  }

  async stop(): Promise<void> {
    if (this.child) await stopProcess(this.child);
    this.child = undefined;
  }
}

/**
 * A private etcd on free 127.0.0.1 ports: one member, or a cluster of several, with its data in
 * a temp folder (on /dev/shm when there is one: etcd fsyncs every write).
 */
export class EtcdCluster {
  private constructor(
    readonly members: EtcdMember[],
    private readonly dir: string,
  ) {}

  static async start(options: EtcdClusterOptions = {}): Promise<EtcdCluster> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const cluster = await EtcdCluster.create(options);
      try {
        await Promise.all(cluster.members.map((m) => m.launch(false)));
        await Promise.all(cluster.members.map((m) => m.healthy()));
        return cluster;
      } catch (error) {
        lastError = error; // most likely a port taken between choosing and binding it
        await cluster.stop();
      }
    }
    throw lastError;
  }

  private static async create(options: EtcdClusterOptions): Promise<EtcdCluster> {
    const size = options.size ?? 1;
    const heartbeat = options.heartbeatMs ?? (size === 1 ? 10 : 25);
    const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
    const dir = mkdtempSync(join(base, 'leasehold-etcd-'));
    const ports: { client: number; peer: number }[] = [];
    for (let i = 0; i < size; i++) ports.push({ client: await freePort(), peer: await freePort() });
    const peers = ports.map((p, i) => `m${i}=http://127.0.0.1:${p.peer}`).join(',');
    const members = ports.map((p, i) => {
      const data = join(dir, `m${i}`);
      mkdirSync(data);
      return new EtcdMember(`m${i}`, p.client, p.peer, [
        ...['--name', `m${i}`, '--data-dir', data],
        ...['--listen-client-urls', `http://127.0.0.1:${p.client}`],
        ...['--advertise-client-urls', `http://127.0.0.1:${p.client}`],
        ...['--listen-peer-urls', `http://127.0.0.1:${p.peer}`],
        ...['--initial-advertise-peer-urls', `http://127.0.0.1:${p.peer}`],
        ...['--initial-cluster', peers, '--initial-cluster-state', 'new'],
        ...['--initial-cluster-token', dir],
        ...['--heartbeat-interval', String(heartbeat)],
        ...['--election-timeout', String(heartbeat * 10)],
        ...['--logger', 'zap', '--log-outputs', 'stderr', '--log-level', 'warn'],
        ...(options.strictReconfigCheck === false ? ['--strict-reconfig-check=false'] : []),
      ]);
    });
    return new EtcdCluster(members, dir);
  }

  /** `etcd://` URL naming every member; add `?prefix=…` and other parameters to it. */
  get url(): string {
    return `etcd://${this.members.map((m) => m.endpoint).join(',')}`;
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.members.map((m) => m.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
