import { createRequire } from 'node:module';
import { PrivateServer, type PrivateServerOptions, type ServerCommand } from './private-server.js';

const require = createRequire(import.meta.url);

/** dynalite's table timings: tables are created, updated and deleted at once. */
export const DYNALITE_TIMINGS = Object.freeze({
  createTableMs: 0,
  deleteTableMs: 0,
  updateTableMs: 0,
});

/** How a `PrivateDynalite` starts. */
export interface PrivateDynaliteOptions extends PrivateServerOptions {
  readonly port: number;
}

/** Why dynalite cannot run here, or `null` when it can. */
export function dynaliteUnavailable(): string | null {
  try {
    require.resolve('dynalite/cli.js');
    return null;
  } catch {
    return 'the dynalite package is not installed';
  }
}

/**
 * dynalite (the DynamoDB API, in memory) in a process of its own (`node …/dynalite/cli.js`) on
 * 127.0.0.1, so its work shares neither the caller's event loop nor its CPU time, and it can be
 * paused. Its data is gone when it ends.
 */
export class PrivateDynalite extends PrivateServer {
  readonly program = 'dynalite';
  readonly port: number;

  constructor(dir: string, options: PrivateDynaliteOptions) {
    super(dir, options);
    this.port = options.port;
  }

  /** `http://127.0.0.1:PORT`. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** `dynamodb://leases?endpoint=…&region=us-east-1`: the table `leases`; add parameters. */
  get url(): string {
    return `dynamodb://leases?endpoint=${encodeURIComponent(this.endpoint)}&region=us-east-1`;
  }

  protected command(): ServerCommand {
    return {
      file: process.execPath,
      args: [
        require.resolve('dynalite/cli.js'),
        ...['--host', '127.0.0.1', '--port', String(this.port)],
        ...Object.entries(DYNALITE_TIMINGS).flatMap(([k, v]) => [`--${k}`, String(v)]),
      ],
    };
  }

  protected isReady(output: string): boolean {
    return output.includes('listening');
  }
}
