import { openStore } from '../../../src/index.js';
import {
  dynaliteUnavailable,
  startDynaliteProcess,
  type DynaliteProcess,
} from '../../harness/dynalite-server.js';
import type { StoreFactory } from '../factory.js';

/**
 * dynalite as a child process (so it can be paused: SIGSTOP); each namespace is a fresh table,
 * created on open. A call's deadline is the store's request timeout. Every store here reads one
 * host clock, so a small skew allowance keeps the expiry tests short. dynalite keeps its tables in
 * memory, so a restart would lose them: it offers none.
 */
export function dynamodbFactory(): StoreFactory {
  let server: DynaliteProcess | undefined;
  return {
    name: 'dynamodb',
    durable: true,
    unavailable: dynaliteUnavailable,
    setup: async () => {
      server = await startDynaliteProcess();
    },
    open: (namespace, options) =>
      openStore(
        server!.url(namespace, {
          createTable: true,
          maxClockSkewMs: 100,
          ...(options?.deadlineMs === undefined ? {} : { requestTimeoutMs: options.deadlineMs }),
        }),
      ),
    pause: () => server!.pause(),
    resume: () => server?.resume(),
    unreachableUrl: (port, deadlineMs) =>
      `dynamodb://nobody_home?endpoint=http://127.0.0.1:${port}&region=us-east-1&requestTimeoutMs=${deadlineMs}`,
    teardown: async () => {
      await server?.stop();
      server = undefined;
    },
  };
}
