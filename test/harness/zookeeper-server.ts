import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { ServerProcess } from './server-process.js';
import { startProcess, stopProcess, tempDir, waitFor } from './processes.js';

/** The jars ZooKeeper 3.8's server needs, as the Debian package installs them. */
const JARS = [
  'zookeeper.jar',
  'zookeeper-jute.jar',
  'slf4j-api.jar',
  'slf4j-nop.jar',
  'netty-handler.jar',
  'netty-common.jar',
  'netty-buffer.jar',
  'netty-transport.jar',
  'netty-codec.jar',
  'netty-resolver.jar',
  'netty-transport-native-epoll.jar',
  'netty-transport-native-unix-common.jar',
  'metrics-core.jar',
  'commons-io.jar',
  'snappy-java.jar',
].map((jar) => `/usr/share/java/${jar}`);

/** Small heap, serial GC, no C2 compiler: a JVM that starts fast and stays modest on two cores. */
const JVM = ['-Xmx128m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'];

/** Whether ZooKeeper 3.8 and Java can run here; the reason when they cannot. */
export function zookeeperUnavailable(): string | null {
  const missing = JARS.filter((jar) => !existsSync(jar));
  if (missing.length > 0) return `ZooKeeper jars missing (Debian package zookeeper): ${missing[0]}`;
  try {
    execFileSync('java', ['-version'], { stdio: 'ignore' });
    return null;
  } catch {
    return 'java not found on PATH (Debian package default-jre-headless)';
  }
}

/** Sends a four-letter-word command and returns the answer ('' when the server does not answer). */
export function fourLetter(port: number, command: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let out = '';
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('connect', () => socket.write(command));
    socket.on('data', (chunk) => (out += chunk.toString()));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

/** Settings of a test server's zoo.cfg that a test may choose. */
export interface ZookeeperConfigOptions {
  /** `4lw.commands.whitelist`; keep `srvr`, which tells the harness a server is ready. @default 'ruok,srvr,stat' */
  fourLetterWords?: string;
  /**
   * `forceSync`: `false` (`no`) acknowledges writes before they are on disk, which is fast and
   * not durable. @default false
   */
  forceSync?: boolean;
}

/** The settings every server here shares (see the docs on test servers). */
function baseConfig(
  dataDir: string,
  clientPort: number,
  options: ZookeeperConfigOptions = {},
): string[] {
  return [
    'tickTime=200',
    `dataDir=${dataDir}`,
    `clientPort=${clientPort}`,
    'clientPortAddress=127.0.0.1',
    'admin.enableServer=false',
    'minSessionTimeout=400',
    // Leases of up to a day are tested: a session's timeout must cover its longest TTL.
    'maxSessionTimeout=172800000',
    `4lw.commands.whitelist=${options.fourLetterWords ?? 'ruok,srvr,stat'}`,
    // All test clients come from 127.0.0.1; the default limit of 60 per address is too few.
    'maxClientCnxns=0',
    `forceSync=${options.forceSync === true ? 'yes' : 'no'}`,
  ];
}

/** One ZooKeeper server process: a standalone server, or a member of a `ZookeeperEnsemble`. */
export class ZookeeperServer extends ServerProcess {
  constructor(
    readonly clientPort: number,
    private readonly configFile: string,
    readonly name = 'zookeeper',
  ) {
    super();
  }

  /**
   * A standalone server on a free port in a fresh temp folder (removed by `stop`), started once
   * per test file.
   */
  static async start(options: ZookeeperConfigOptions = {}): Promise<ZookeeperServer> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const dir = tempDir('leasehold-zk-');
      const port = await freePort();
      const data = join(dir.path, 'data');
      mkdirSync(data);
      const config = join(dir.path, 'zoo.cfg');
      writeFileSync(config, baseConfig(data, port, options).join('\n') + '\n');
      const server = new ZookeeperServer(port, config);
      server.cleanup = dir.cleanup;
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

  private cleanup: (() => void) | undefined;

  /** `127.0.0.1:port` of its client port. */
  get endpoint(): string {
    return `127.0.0.1:${this.clientPort}`;
  }

  /** `zookeeper://` URL of this server alone; add the chroot path. */
  get url(): string {
    return `zookeeper://${this.endpoint}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Starts the JVM; with `wait`, until it serves clients (`srvr` reports a mode). */
  async launch(wait = true): Promise<void> {
    const main = 'org.apache.zookeeper.server.quorum.QuorumPeerMain';
    this.child = startProcess('java', [...JVM, '-cp', JARS.join(':'), main, this.configFile]);
    if (wait) await this.serving();
  }

  /** Waits until the server serves clients: standalone, leader or follower. */
  async serving(timeoutMs = 20_000): Promise<void> {
    const child = this.child;
    if (!child) throw new Error(`${this.name} is not running`);
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code, signal) =>
        reject(
          new Error(`${this.name} exited (${code ?? signal}) during start:\n${child.output()}`),
        ),
      ),
    );
    exited.catch(() => {});
    await Promise.race([
      waitFor(
        `${this.name} on port ${this.clientPort} to serve`,
        async () => (await this.mode()) !== undefined,
        timeoutMs,
        50,
      ),
      exited,
    ]);
  }

  /** `standalone`, `leader` or `follower`; `undefined` while it does not serve. */
  async mode(): Promise<string | undefined> {
    const answer = await fourLetter(this.clientPort, 'srvr', 500);
    return /^Mode: (\w+)/m.exec(answer)?.[1];
  }

  async stop(): Promise<void> {
    if (this.child) await stopProcess(this.child);
    this.child = undefined;
    this.cleanup?.();
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
    const members = ports.map((p, i) => {
      const data = join(dir.path, `m${i + 1}`);
      mkdirSync(data);
      writeFileSync(join(data, 'myid'), `${i + 1}\n`);
      const config = join(dir.path, `zoo${i + 1}.cfg`);
      const lines = [
        ...baseConfig(data, p.client, options),
        ...['initLimit=10', 'syncLimit=5', ...servers],
      ];
      writeFileSync(config, lines.join('\n') + '\n');
      return new ZookeeperServer(p.client, config, `zookeeper m${i + 1}`);
    });
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
