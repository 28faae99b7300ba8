import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { onPath } from './process-tree.js';
import { PrivateServer, type PrivateServerOptions, type ServerCommand } from './private-server.js';

/** How a `PrivateNats` starts. */
export interface PrivateNatsOptions extends PrivateServerOptions {
  /** More server flags, after the defaults: `['--user', 'u', '--pass', 'pw']`. */
  readonly args?: readonly string[];
}

/** Why `nats-server` cannot run here, or `null` when it can. */
export function natsUnavailable(): string | null {
  return onPath('nats-server')
    ? null
    : 'nats-server not found on PATH (Debian package nats-server)';
}

/**
 * A private `nats-server -js` on 127.0.0.1: the first start lets the server pick its client and
 * monitoring ports (`-p -1 -m -1`, read back from its ports file), later starts reuse them, and
 * the JetStream store (`dir/js`) stays across `kill` and `restart`.
 */
export class PrivateNats extends PrivateServer {
  readonly program = 'nats-server';
  port = -1;
  monitorPort = -1;

  constructor(
    dir: string,
    private readonly options: PrivateNatsOptions = {},
  ) {
    super(dir, options);
  }

  /** `nats://127.0.0.1:PORT`; add `?bucket=…` and other parameters. */
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** `http://127.0.0.1:PORT` of the monitoring endpoint. */
  get monitorUrl(): string {
    return `http://127.0.0.1:${this.monitorPort}`;
  }

  private get portsDir(): string {
    return join(this.dir, 'ports');
  }

  protected command(): ServerCommand {
    rmSync(this.portsDir, { recursive: true, force: true });
    mkdirSync(this.portsDir);
    return {
      file: onPath('nats-server') ?? 'nats-server',
      args: [
        ...['-a', '127.0.0.1', '-p', String(this.port), '-m', String(this.monitorPort)],
        ...['-js', '-sd', join(this.dir, 'js'), '--ports_file_dir', this.portsDir],
        ...(this.options.args ?? []),
      ],
    };
  }

  /** Reads the ports back, then asks `/healthz`, which answers ok once JetStream is ready. */
  protected async isReady(): Promise<boolean> {
    const file = readdirSync(this.portsDir).find((name) => name.endsWith('.ports'));
    if (!file) return false;
    const ports = JSON.parse(readFileSync(join(this.portsDir, file), 'utf8')) as {
      nats: string[];
      monitoring: string[];
    };
    this.port = Number(new URL(ports.nats[0]!).port);
    this.monitorPort = Number(new URL(ports.monitoring[0]!).port);
    const health = await fetch(`${this.monitorUrl}/healthz`, {
      signal: AbortSignal.timeout(500),
    });
    return health.ok && ((await health.json()) as { status?: string }).status === 'ok';
  }
}
