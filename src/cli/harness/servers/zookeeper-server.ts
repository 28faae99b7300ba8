import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { PrivateServer, type PrivateServerOptions, type ServerCommand } from './private-server.js';

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

/**
 * Serial GC, no C2 compiler: a JVM that starts fast and stays modest on two cores. A heap that
 * runs out ends the server at once with a line on stderr (kept in its output), rather than
 * leaving it to go on in whatever state the error left it: ZooKeeper's own log goes nowhere
 * (slf4j-nop).
 */
const JVM = ['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-XX:+ExitOnOutOfMemoryError'];

/** Why ZooKeeper 3.8 and Java cannot run here, or `null` when they can. */
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
export function fourLetter(
  port: number,
  command: string,
  timeoutMs = 1000,
  host = '127.0.0.1',
): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
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

/** Settings of a server's zoo.cfg a caller may choose. */
export interface ZookeeperConfigOptions {
  /** `4lw.commands.whitelist`; keep `srvr`, which tells a server is ready. @default 'ruok,srvr,stat' */
  readonly fourLetterWords?: string;
  /**
   * `forceSync`: `false` (`no`) acknowledges writes before they are on disk, which is fast and
   * not durable. @default false
   */
  readonly forceSync?: boolean;
  /**
   * The JVM's heap, in MiB. Small for the tests' few znodes; a fleet of 10,000 records and more,
   * each listed whole by every member, needs more (the benchmarks give it 1,024).
   * @default 128
   */
  readonly heapMb?: number;
}

/** How a `PrivateZookeeper` starts. */
export interface PrivateZookeeperOptions extends PrivateServerOptions, ZookeeperConfigOptions {
  readonly clientPort: number;
  /** The address its client port listens on. @default '127.0.0.1' */
  readonly host?: string;
  /** For messages: `zookeeper m1`. @default 'zookeeper' */
  readonly name?: string;
  /** An ensemble member's id (written to `data/myid`) and the `server.N=…` lines of every member. */
  readonly ensemble?: { readonly id: number; readonly servers: readonly string[] };
}

/**
 * A private ZooKeeper on 127.0.0.1: a standalone server, or a member of an ensemble. Its
 * `zoo.cfg` and `data` folder are in its folder: ticks of 200 ms, sessions from 400 ms to a day
 * (leases of up to a day), no admin server (it would bind 8080), no limit of connections per
 * address (every client comes from 127.0.0.1). Ready once `srvr` reports a mode.
 */
export class PrivateZookeeper extends PrivateServer {
  readonly program: string;
  readonly clientPort: number;
  readonly host: string;
  protected override readonly readyPollMs = 50;
  private readonly configFile: string;
  private readonly heapMb: number;

  constructor(dir: string, options: PrivateZookeeperOptions) {
    super(dir, options);
    this.program = options.name ?? 'zookeeper';
    this.clientPort = options.clientPort;
    this.host = options.host ?? '127.0.0.1';
    this.heapMb = options.heapMb ?? 128;
    const data = join(dir, 'data');
    mkdirSync(data, { recursive: true });
    const lines = [
      'tickTime=200',
      `dataDir=${data}`,
      `clientPort=${options.clientPort}`,
      `clientPortAddress=${this.host}`,
      'admin.enableServer=false',
      'minSessionTimeout=400',
      'maxSessionTimeout=172800000',
      `4lw.commands.whitelist=${options.fourLetterWords ?? 'ruok,srvr,stat'}`,
      'maxClientCnxns=0',
      `forceSync=${options.forceSync === true ? 'yes' : 'no'}`,
    ];
    if (options.ensemble) {
      writeFileSync(join(data, 'myid'), `${options.ensemble.id}\n`);
      lines.push('initLimit=10', 'syncLimit=5', ...options.ensemble.servers);
    }
    this.configFile = join(dir, 'zoo.cfg');
    writeFileSync(this.configFile, lines.join('\n') + '\n');
  }

  get port(): number {
    return this.clientPort;
  }

  /** For messages: `zookeeper`, or `zookeeper m1` for a member. */
  get name(): string {
    return this.program;
  }

  /** `host:port` of its client port. */
  get endpoint(): string {
    return `${this.host}:${this.clientPort}`;
  }

  /** `zookeeper://` URL of this server alone; add the chroot path. */
  get url(): string {
    return `zookeeper://${this.endpoint}`;
  }

  /** `standalone`, `leader` or `follower`; `undefined` while it does not serve. */
  async mode(): Promise<string | undefined> {
    const answer = await fourLetter(this.clientPort, 'srvr', 500, this.host);
    return /^Mode: (\w+)/m.exec(answer)?.[1];
  }

  protected command(): ServerCommand {
    const main = 'org.apache.zookeeper.server.quorum.QuorumPeerMain';
    const heap = `-Xmx${this.heapMb}m`;
    return { file: 'java', args: [heap, ...JVM, '-cp', JARS.join(':'), main, this.configFile] };
  }

  protected async isReady(): Promise<boolean> {
    return (await this.mode()) !== undefined;
  }
}
