import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { PrivateEtcd } from '../../src/cli/harness/servers/etcd-server.js';
import { freePort, serverFolder } from '../../src/cli/harness/servers/process-tree.js';
import { startOnFreePort } from '../../src/cli/harness/servers/start-on-free-port.js';

export { etcdUnavailable } from '../../src/cli/harness/servers/etcd-server.js';

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

/** One etcd process: a member of an `EtcdCluster`, its data kept by `stop` for `launch`. */
export class EtcdMember extends PrivateEtcd {
  /** Starts the process; with `wait`, until it reports itself healthy (which needs a quorum). */
  override async launch(wait: boolean | number = true): Promise<void> {
    if (wait === false) this.spawnServer();
    else await super.launch(wait === true ? 15_000 : wait);
  }

  /** Waits until it reports itself healthy. */
  async healthy(): Promise<void> {
    await this.untilReady(15_000);
  }

  /** Shuts the member down (SIGTERM, SIGKILL after a grace period); its data stays. */
  override async stop(): Promise<void> {
    await this.shutdown();
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
    return startOnFreePort((clientPort) => EtcdCluster.create(options, clientPort), {
      start: async (cluster) => {
        await Promise.all(cluster.members.map((m) => m.launch(false)));
        await Promise.all(cluster.members.map((m) => m.healthy()));
      },
      discard: (cluster) => cluster.stop(),
    });
  }

  /** The members, unstarted, the first on `clientPort` and every other port probed here. */
  private static async create(
    options: EtcdClusterOptions,
    clientPort: number,
  ): Promise<EtcdCluster> {
    const size = options.size ?? 1;
    const dir = serverFolder('leasehold-etcd-', true);
    const ports: { client: number; peer: number }[] = [];
    for (let i = 0; i < size; i++)
      ports.push({ client: i === 0 ? clientPort : await freePort(), peer: await freePort() });
    const initialCluster = ports.map((p, i) => `m${i}=http://127.0.0.1:${p.peer}`).join(',');
    const members = ports.map(
      (p, i) =>
        new EtcdMember(join(dir, `m${i}`), {
          name: `m${i}`,
          clientPort: p.client,
          peerPort: p.peer,
          initialCluster,
          clusterToken: dir,
          heartbeatMs: options.heartbeatMs ?? (size === 1 ? 10 : 25),
          strictReconfigCheck: options.strictReconfigCheck,
          ownsDir: false,
          watchdog: false,
          detached: false,
        }),
    );
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
