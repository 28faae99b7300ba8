import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { onPath } from '../servers/process-tree.js';
import {
  PrivateServer,
  type PrivateServerOptions,
  type ServerCommand,
} from '../servers/private-server.js';

export { natsUnavailable } from '../servers/nats-server.js';

/** How a `LabNats` starts: one server of a JetStream cluster, on its lab host's address. */
export interface LabNatsOptions extends PrivateServerOptions {
  /** The server's name in the cluster (`n1`). */
  readonly name: string;
  readonly host: string;
  /** Every server's route URL (`nats-route://host:6222`), its own included. */
  readonly routes: readonly string[];
}

/**
 * One `nats-server` of a three-server JetStream cluster in a lab: clients on port 4222, routes on
 * 6222, monitoring on 8222, all on its host's address; its JetStream store stays in its folder
 * across `kill` and `launch`.
 */
export class LabNats extends PrivateServer {
  readonly program = 'nats-server';
  readonly port = 4222;
  readonly serverName: string;
  private readonly host: string;
  private readonly configFile: string;

  constructor(dir: string, options: LabNatsOptions) {
    super(dir, options);
    this.serverName = options.name;
    this.host = options.host;
    mkdirSync(join(dir, 'js'), { recursive: true });
    this.configFile = join(dir, 'nats.conf');
    const quoted = (text: string): string => JSON.stringify(text);
    writeFileSync(
      this.configFile,
      [
        `server_name: ${options.name}`,
        `listen: ${quoted(`${options.host}:4222`)}`,
        `http: ${quoted(`${options.host}:8222`)}`,
        `jetstream { store_dir: ${quoted(join(dir, 'js'))} }`,
        'cluster {',
        '  name: lab',
        `  listen: ${quoted(`${options.host}:6222`)}`,
        `  routes: [${options.routes.map(quoted).join(', ')}]`,
        '}',
        '',
      ].join('\n'),
    );
  }

  get url(): string {
    return `nats://${this.host}:4222`;
  }

  protected command(): ServerCommand {
    return { file: onPath('nats-server') ?? 'nats-server', args: ['-c', this.configFile] };
  }

  /** `/healthz` answers ok once JetStream is up and current with the cluster. */
  protected async isReady(): Promise<boolean> {
    const health = await fetch(`http://${this.host}:8222/healthz`, {
      signal: AbortSignal.timeout(500),
    });
    return health.ok && ((await health.json()) as { status?: string }).status === 'ok';
  }

  /** The name of the server leading `stream`, as this server's monitoring endpoint reports it. */
  async streamLeader(stream: string): Promise<string | undefined> {
    const response = await fetch(`http://${this.host}:8222/jsz?accounts=true&streams=true`, {
      signal: AbortSignal.timeout(500),
    });
    const jsz = (await response.json()) as {
      account_details?: { stream_detail?: { name: string; cluster?: { leader?: string } }[] }[];
    };
    for (const account of jsz.account_details ?? [])
      for (const detail of account.stream_detail ?? [])
        if (detail.name === stream) return detail.cluster?.leader;
    return undefined;
  }
}
