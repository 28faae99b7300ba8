import type { LeaseStore } from '../../../src/index.js';
import { parseStoreUrl } from '../../../src/core/store-url.js';
import { openNats } from '../../../src/stores/nats/open.js';
import { NatsServer, natsUnavailable } from '../../harness/nats-server.js';
import type { StoreFactory } from '../factory.js';

/**
 * A private `nats-server -js`; each namespace is its own KV bucket, created on open. Every store
 * here reads one host clock, so a small skew allowance keeps the expiry tests short. The server can be paused and restarted (SIGKILL, then a
 * start on the same JetStream folder and port).
 */
export function natsFactory(): StoreFactory {
  let server: NatsServer | undefined;
  return {
    name: 'nats',
    durable: true,
    unavailable: natsUnavailable,
    setup: async () => {
      server = await NatsServer.start();
    },
    open: (namespace, options): Promise<LeaseStore> =>
      openNats(
        parseStoreUrl(
          `${server!.url}?bucket=${namespace}&maxClockSkewMs=100&timeoutMs=${options?.deadlineMs ?? 3000}`,
        ),
      ),
    watchEvents: ['acquired', 'released', 'expired'],
    pause: () => server!.pause(),
    resume: () => server?.resume(),
    restart: () => server!.restart(),
    unreachableUrl: (port, deadlineMs) =>
      `nats://lh:s3cret@127.0.0.1:${port}?timeoutMs=${deadlineMs}`,
    teardown: async () => {
      await server?.stop();
      server = undefined;
    },
  };
}
