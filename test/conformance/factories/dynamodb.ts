import { openStore } from '../../../src/index.js';
import {
  dynaliteUnavailable,
  startDynalite,
  type DynaliteServer,
} from '../../harness/dynalite-server.js';
import type { StoreFactory } from '../factory.js';

/**
 * dynalite in the test process; each namespace is a fresh table, created on open. Every store
 * here reads one host clock, so a small skew allowance keeps the expiry tests short.
 */
export function dynamodbFactory(): StoreFactory {
  let server: DynaliteServer | undefined;
  return {
    name: 'dynamodb',
    durable: true,
    unavailable: dynaliteUnavailable,
    setup: async () => {
      server = await startDynalite();
    },
    open: (namespace, options) =>
      openStore(
        server!.url(namespace, {
          createTable: true,
          maxClockSkewMs: 100,
          ...(options?.deadlineMs === undefined ? {} : { requestTimeoutMs: options.deadlineMs }),
        }),
      ),
    unreachableUrl: (port, deadlineMs) =>
      `dynamodb://nobody_home?endpoint=http://127.0.0.1:${port}&region=us-east-1&requestTimeoutMs=${deadlineMs}`,
    teardown: async () => {
      await server?.stop();
      server = undefined;
    },
  };
}
