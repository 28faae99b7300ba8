import { expect, it } from 'vitest';
import { loadDriver, loadPackage } from '../../src/core/load-driver.js';
import { LeaseError } from '../../src/index.js';

it('a missing driver package gives DRIVER_MISSING naming what to install', async () => {
  const error = await loadDriver('leasehold-no-such-driver', 'example').catch((e: unknown) => e);
  expect(error).toBeInstanceOf(LeaseError);
  expect(error).toMatchObject({ code: 'DRIVER_MISSING', retryable: false });
  expect((error as Error).message).toBe(
    'the example store needs the "leasehold-no-such-driver" package: npm install leasehold-no-such-driver',
  );
});

it('an installed driver loads, default export first', async () => {
  const Database = await loadDriver<new (path: string) => { close(): void }>(
    'better-sqlite3',
    'sqlite',
  );
  const db = new Database(':memory:');
  db.close();
});

it('an optional peer of another feature loads when used', async () => {
  const prom = await loadPackage<{ Registry: unknown }>('prom-client', 'Prometheus metrics need');
  expect(typeof prom.Registry).toBe('function');
});

it('a missing peer gives DRIVER_MISSING in the words of the feature that needs it', async () => {
  await expect(
    loadPackage('leasehold-no-such-package', 'Prometheus metrics need'),
  ).rejects.toMatchObject({
    name: 'LeaseError',
    code: 'DRIVER_MISSING',
    retryable: false,
    message:
      'Prometheus metrics need the "leasehold-no-such-package" package: npm install leasehold-no-such-package',
  });
});
