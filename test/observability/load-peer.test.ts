import { describe, expect, it } from 'vitest';
import { loadPeer } from '../../src/observability/metrics/load-peer.js';

describe('optional peers of the metrics adapters', () => {
  it('are loaded when used', async () => {
    const prom = await loadPeer<{ Registry: unknown }>('prom-client', 'Prometheus metrics');
    expect(typeof prom.Registry).toBe('function');
  });

  it('give DRIVER_MISSING naming the package to install when absent', async () => {
    await expect(loadPeer('leasehold-no-such-package', 'Prometheus metrics')).rejects.toMatchObject(
      {
        name: 'LeaseError',
        code: 'DRIVER_MISSING',
        retryable: false,
        message:
          'Prometheus metrics need the "leasehold-no-such-package" package: npm install leasehold-no-such-package',
      },
    );
  });
});
