import { join } from 'node:path';
import { freePort, serverFolder } from '../../src/cli/harness/servers/process-tree.js';
import { startOnFreePort } from '../../src/cli/harness/servers/start-on-free-port.js';
import {
  PrivateZookeeper,
  type ZookeeperConfigOptions,
} from '../../src/cli/harness/servers/zookeeper-server.js';
import { tempDir, waitFor } from './processes.js';

export {
  fourLetter,
  zookeeperUnavailable,
  type ZookeeperConfigOptions,
} from '../../src/cli/harness/servers/zookeeper-server.js';

/** One ZooKeeper server process: a standalone server, or a member of a `ZookeeperEnsemble`. */
export class ZookeeperServer extends PrivateZookeeper {
  /**
   * A standalone server on a free port in a fresh temp folder (removed by `stop`), started once
   * per test file.
   */
  static async start(options: ZookeeperConfigOptions = {}): Promise<ZookeeperServer> {
    return startOnFreePort(
      (clientPort) =>
        new ZookeeperServer(serverFolder('leasehold-zk-'), {
          ...options,
          clientPort,
          watchdog: false,
          detached: false,
        }),
      { start: (server) => server.launch(), discard: (server) => server.stop() },
    );
  }

  /** Starts the JVM; with `wait`, until it serves clients (`srvr` reports a mode). */
  override async launch(wait: boolean | number = true): Promise<void> {
    if (wait === false) this.spawnServer();
    else await super.launch(wait === true ? 20_000 : wait);
  }

  /** Waits until the server serves clients: standalone, leader or follower. */
  async serving(timeoutMs = 20_000): Promise<void> {
    await this.untilReady(timeoutMs);
  }

  /** A member's `stop` keeps its data for `launch`; a standalone server's removes its folder. */
  override async stop(): Promise<void> {
    if (this.ownsDir) await super.stop();
    else await this.shutdown();
  }
}

/** Three ZooKeeper servers in one ensemble on free loopback ports, for failover tests. */
export class ZookeeperEnsemble {
  private constructor(
    readonly members: ZookeeperServer[],
    private readonly dir: ReturnType<typeof tempDir>,
  ) {}

  static async start(size = 3, options: ZookeeperConfigOptions = {}): Promise<ZookeeperEnsemble> {
    return startOnFreePort((clientPort) => ZookeeperEnsemble.create(size, options, clientPort), {
      start: async (ensemble) => {
        await Promise.all(ensemble.members.map((m) => m.launch(false)));
        await Promise.all(ensemble.members.map((m) => m.serving(30_000)));
      },
      discard: (ensemble) => ensemble.stop(),
    });
  }

  /** The members, unstarted, the first on `clientPort` and every other port probed here. */
  private static async create(
    size: number,
    options: ZookeeperConfigOptions,
    clientPort: number,
  ): Promise<ZookeeperEnsemble> {
    const dir = tempDir('leasehold-zk-ensemble-');
    const ports: { client: number; quorum: number; election: number }[] = [];
    for (let i = 0; i < size; i++) {
      ports.push({
        client: i === 0 ? clientPort : await freePort(),
        quorum: await freePort(),
        election: await freePort(),
      });
    }
    const servers = ports.map((p, i) => `server.${i + 1}=127.0.0.1:${p.quorum}:${p.election}`);
    const members = ports.map(
      (p, i) =>
        new ZookeeperServer(join(dir.path, `m${i + 1}`), {
          ...options,
          clientPort: p.client,
          name: `zookeeper m${i + 1}`,
          ensemble: { id: i + 1, servers },
          ownsDir: false,
          watchdog: false,
          detached: false,
        }),
    );
    return new ZookeeperEnsemble(members, dir);
  }

  /** `zookeeper://` URL naming every member; add the chroot path. */
  get url(): string {
    return `zookeeper://${this.members.map((m) => m.endpoint).join(',')}`;
  }

  /** The member that is the leader now, once one was elected. */
  async leader(timeoutMs = 20_000): Promise<ZookeeperServer> {
    let found: ZookeeperServer | undefined;
    await waitFor(
      'a ZooKeeper leader',
      async () => {
        for (const member of this.members) {
          if (member.running && (await member.mode()) === 'leader') found = member;
        }
        return found !== undefined;
      },
      timeoutMs,
      100,
    );
    return found!;
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.members.map((m) => m.stop()));
    this.dir.cleanup();
  }
}
