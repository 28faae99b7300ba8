import { parseStoreUrl } from '../../../src/core/store-url.js';
import { openS3 } from '../../../src/stores/s3/open.js';
import { CephServer, cephUnavailable } from '../../harness/ceph-server.js';
import type { StoreFactory } from '../factory.js';

/**
 * A private Ceph (one monitor, one memstore OSD, radosgw) started once per test file; every
 * namespace is a prefix of one bucket. Every store here reads one host clock, so a small skew
 * allowance keeps the expiry tests short.
 */
export function s3Factory(): StoreFactory {
  let server: CephServer | undefined;
  return {
    name: 's3',
    durable: true,
    unavailable: cephUnavailable,
    setup: async () => {
      server = await CephServer.start();
    },
    open: (namespace) =>
      openS3(
        parseStoreUrl(
          server!.url('leasehold-conformance', namespace, {
            createBucket: true,
            maxClockSkewMs: 100,
          }),
        ),
      ),
    teardown: async () => {
      await server?.stop();
      server = undefined;
    },
  };
}
