import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import {
  PrivateDynalite,
  DYNALITE_TIMINGS,
} from '../../src/cli/harness/servers/dynalite-server.js';
import { serverFolder } from '../../src/cli/harness/servers/process-tree.js';
import { startOnFreePort } from '../../src/cli/harness/servers/start-on-free-port.js';

const require = createRequire(import.meta.url);

// The SDK warns once per process that its releases after 2026 need Node 22; tests pin the version.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

type Dynalite = (options: object) => Server;

/** Why dynalite or the AWS SDK cannot run here, or `null` when they can. */
export function dynaliteUnavailable(): string | null {
  for (const pkg of ['dynalite', '@aws-sdk/client-dynamodb']) {
    try {
      require.resolve(pkg);
    } catch {
      return `the ${pkg} package is not installed`;
    }
  }
  return null;
}

/** A dynalite (DynamoDB API emulator, in memory) on a free 127.0.0.1 port. */
export interface DynaliteServer {
  readonly port: number;
  /** `http://127.0.0.1:PORT`. */
  readonly endpoint: string;
  /** `dynamodb://TABLE?endpoint=…&region=us-east-1` plus `params`. */
  url(table: string, params?: Record<string, string | number | boolean>): string;
  stop(): Promise<void>;
}

/** A dynalite run as a child process, so a test can freeze it. */
export interface DynaliteProcess extends DynaliteServer {
  /** SIGSTOP: connections stay open, nothing answers. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
}

function urlFor(port: number) {
  return (table: string, params: Record<string, string | number | boolean> = {}): string => {
    const query = new URLSearchParams({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])),
    });
    return `dynamodb://${table}?${query}`;
  };
}

/** dynalite inside the test process: starts in milliseconds, the port picked by the OS. */
export async function startDynalite(): Promise<DynaliteServer> {
  const dynalite = require('dynalite') as Dynalite;
  const server = dynalite(DYNALITE_TIMINGS);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('dynalite has no port');
  const port = address.port;
  return {
    port,
    endpoint: `http://127.0.0.1:${port}`,
    url: urlFor(port),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** dynalite as a child process (`node …/dynalite/cli.js`), ready in about 0.1 s. */
export async function startDynaliteProcess(): Promise<DynaliteProcess> {
  const server = await startOnFreePort(
    (port) =>
      new PrivateDynalite(serverFolder('leasehold-dynalite-'), {
        port,
        watchdog: false,
        detached: false,
      }),
    {
      start: (server) => server.launch(15_000),
      discard: async (server) => {
        await server.kill();
        await server.stop();
      },
    },
  );
  return processHandle(server);
}

function processHandle(server: PrivateDynalite): DynaliteProcess {
  return {
    port: server.port,
    endpoint: server.endpoint,
    url: urlFor(server.port),
    pause: () => server.pause(),
    resume: () => server.resume(),
    stop: async () => {
      await server.kill();
      await server.stop();
    },
  };
}
