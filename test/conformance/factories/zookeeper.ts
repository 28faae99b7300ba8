import type { LeaseStore } from '../../../src/index.js';
import { parseStoreUrl } from '../../../src/core/store-url.js';
import { openZookeeper } from '../../../src/stores/zookeeper/open.js';
import { ZookeeperServer, zookeeperUnavailable } from '../../harness/zookeeper-server.js';
import type { StoreFactory } from '../factory.js';

/**
 * A private standalone ZooKeeper 3.8 (tickTime 200 ms, so sessions may be as short as 400 ms);
 * each namespace is its own chroot znode, opened through a store URL. Leases lapse on the server's
 * clock at their TTL, so the suite's short TTL is the default one. The server can be paused and
 * restarted (SIGKILL, then a start on the same data folder and port).
 */
export function zookeeperFactory(): StoreFactory {
  let server: ZookeeperServer | undefined;
  return {
    name: 'zookeeper',
    durable: true,
    unavailable: zookeeperUnavailable,
    setup: async () => {
      server = await ZookeeperServer.start();
    },
    open: (namespace, options): Promise<LeaseStore> =>
      openZookeeper(
        parseStoreUrl(
          `${server!.url}/leasehold/${namespace}?timeoutMs=${options?.deadlineMs ?? 3000}`,
        ),
      ),
    watchEvents: ['acquired', 'released'],
    pause: () => server!.pause(),
    resume: () => server?.resume(),
    restart: () => server!.restart(),
    unreachableUrl: (port, deadlineMs) =>
      `zookeeper://127.0.0.1:${port}/leasehold?timeoutMs=${deadlineMs}`,
    teardown: async () => server?.stop(),
  };
}
