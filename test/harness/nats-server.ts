import { PrivateNats, type PrivateNatsOptions } from '../../src/cli/harness/servers/nats-server.js';
import { freePort, serverFolder } from '../../src/cli/harness/servers/process-tree.js';

export { natsUnavailable } from '../../src/cli/harness/servers/nats-server.js';

/** One client connection as the server's monitoring endpoint reports it. */
export interface NatsConnectionStats {
  readonly cid: number;
  readonly name?: string;
  /** Messages the server received from this client: one per request it sent. */
  readonly in_msgs: number;
  /** Payload bytes the server received from this client. */
  readonly in_bytes: number;
}

/** How to start a `NatsServer`; the defaults make a single server. */
export type NatsServerOptions = Pick<PrivateNatsOptions, 'args'>;

/**
 * A private `nats-server -js` on 127.0.0.1 (`PrivateNats`): the server picks its ports at the
 * first start, later starts reuse them, and the JetStream store stays across `kill` / `restart`
 * until `stop`.
 */
export class NatsServer extends PrivateNats {
  private constructor(options: NatsServerOptions) {
    super(serverFolder('leasehold-nats-'), { ...options, watchdog: false, detached: false });
  }

  static async start(options: NatsServerOptions = {}): Promise<NatsServer> {
    const server = new NatsServer(options);
    try {
      await server.launch(15_000);
      return server;
    } catch (error) {
      await server.stop();
      throw error;
    }
  }

  /** The client connections the server has now, with their message counts. */
  async connections(): Promise<NatsConnectionStats[]> {
    const response = await fetch(`${this.monitorUrl}/connz?limit=1024`, {
      signal: AbortSignal.timeout(2000),
    });
    return ((await response.json()) as { connections?: NatsConnectionStats[] }).connections ?? [];
  }

  /**
   * The messages and payload bytes the server received while `work` ran, summed over connections
   * by id: a connection closed meanwhile (a helper's, say) neither adds nor takes away, and the
   * counters, which can trail a reply already received, are read until two reads agree, before
   * `work` and after it.
   */
  async receivedDuring<T>(
    work: () => Promise<T>,
  ): Promise<{ result: T; msgs: number; bytes: number }> {
    const read = async (): Promise<Map<number, NatsConnectionStats>> =>
      new Map((await this.connections()).map((c) => [c.cid, c]));
    const total = (m: Map<number, NatsConnectionStats>): number =>
      [...m.values()].reduce((sum, c) => sum + c.in_msgs, 0);
    const settled = async (): Promise<Map<number, NatsConnectionStats>> => {
      let now = await read();
      for (let last = -1; total(now) !== last;) {
        last = total(now);
        await new Promise((resolve) => setTimeout(resolve, 25));
        now = await read();
      }
      return now;
    };
    const before = await settled();
    const result = await work();
    const after = await settled();
    let msgs = 0;
    let bytes = 0;
    for (const [cid, c] of after) {
      msgs += c.in_msgs - (before.get(cid)?.in_msgs ?? 0);
      bytes += c.in_bytes - (before.get(cid)?.in_bytes ?? 0);
    }
    return { result, msgs, bytes };
  }
}

/**
 * Three `NatsServer`s routed into one JetStream cluster on loopback (cluster ports chosen free
 * beforehand, client and monitoring ports picked by each server), for streams with replicas.
 * Started together: none reports healthy before the others have joined.
 */
export class NatsCluster {
  private constructor(readonly servers: NatsServer[]) {}

  static async start(size = 3): Promise<NatsCluster> {
    const routes = await Promise.all(Array.from({ length: size }, () => freePort()));
    const started = await Promise.allSettled(
      routes.map((port, i) =>
        NatsServer.start({
          args: [
            ...['--server_name', `n${i}`, '--cluster_name', 'leasehold'],
            ...['--cluster', `nats://127.0.0.1:${port}`],
            ...['--routes', routes.map((p) => `nats://127.0.0.1:${p}`).join(',')],
          ],
        }),
      ),
    );
    const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await Promise.allSettled(servers.map((s) => s.stop()));
      throw failed.reason;
    }
    return new NatsCluster(servers);
  }

  /** `nats://` with every server, for a store URL. */
  get url(): string {
    return `nats://${this.servers.map((s) => `127.0.0.1:${s.port}`).join(',')}`;
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.servers.map((s) => s.stop()));
  }
}
