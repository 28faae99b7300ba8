import { join } from 'node:path';
import { freePort, serverFolder } from '../../src/cli/harness/servers/process-tree.js';
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
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const clientPort = await freePort();
      const server = new ZookeeperServer(serverFolder('leasehold-zk-'), {
        ...options,
        clientPort,
        watchdog: false,
        detached: false,
      });
      try {
        await server.launch();
        return server;
      } catch (error) {
        lastError = error; // most likely a port taken between choosing and binding it
        await server.stop();
      }
    }
    throw lastError;
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
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const ensemble = await ZookeeperEnsemble.create(size, options);
      try {
        await Promise.all(ensemble.members.map((m) => m.launch(false)));
        await Promise.all(ensemble.members.map((m) => m.serving(30_000)));
        return ensemble;
      } catch (error) {
        lastError = error;
        await ensemble.stop();
      }
    }
    throw lastError;
  }

  private static async create(
    size: number,
    options: ZookeeperConfigOptions,
  ): Promise<ZookeeperEnsemble> {
    const dir = tempDir('leasehold-zk-ensemble-');
    const ports: { client: number; quorum: number; election: number }[] = [];
    for (let i = 0; i < size; i++) {
      ports.push({
        client: await freePort(),
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
