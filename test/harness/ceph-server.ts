import { PrivateCeph } from '../../src/cli/harness/servers/ceph-server.js';

export { cephUnavailable } from '../../src/cli/harness/servers/ceph-server.js';

// The SDK warns once per process that its releases after 2026 need Node 22; tests pin the version.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** The S3 user every private Ceph of the tests gets. */
export const CEPH_S3_USER = Object.freeze({
  accessKeyId: 'leasehold-test',
  secretAccessKey: 'leasehold-test-secret',
});

/**
 * A private Ceph (`PrivateCeph`): one monitor, one memstore OSD, one radosgw (the S3 endpoint)
 * and the `CEPH_S3_USER`. `kill`, `pause`, `resume` and `launch` act on radosgw.
 */
export type CephServer = PrivateCeph;

export const CephServer = {
  /** Starts a fresh cluster; a failed bootstrap is retried on fresh ports and a fresh folder. */
  start: (attempts = 3): Promise<CephServer> => PrivateCeph.start(CEPH_S3_USER, attempts),
};
