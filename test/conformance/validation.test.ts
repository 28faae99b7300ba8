import { expect, it } from 'vitest';
import { LeaseError, type Lease, type LeaseStore } from '../../src/index.js';
import { describeStores } from './stores.js';

async function rejects(call: () => Promise<unknown>, field: string): Promise<void> {
  const error = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected INVALID_ARGUMENT naming ${field}`).toBeInstanceOf(LeaseError);
  expect((error as LeaseError).code).toBe('INVALID_ARGUMENT');
  expect((error as LeaseError).message).toContain(field);
}

const BAD_RESOURCES: [unknown, string][] = [
  ['', 'empty'],
  ['x'.repeat(513), '513 bytes'],
  ['é'.repeat(257), '514 bytes'],
  ['\ud800', 'lone surrogate'],
  ['a\u0000b', 'NUL'],
  [42, 'number'],
  [undefined, 'undefined'],
  [null, 'null'],
];

describeStores('input checks', ({ open }) => {
  let store: LeaseStore;
  let lease: Lease;
  const setup = async (): Promise<void> => {
    store = await open();
    lease = (await store.tryAcquire('valid', 'a', 5000))!;
  };

  it('rejects bad resources at every method, naming the field', async () => {
    await setup();
    for (const [bad] of BAD_RESOURCES) {
      await rejects(() => store.tryAcquire(bad as string, 'a', 5000), 'resource');
      await rejects(() => store.get(bad as string), 'resource');
      await rejects(() => store.renew({ ...lease, resource: bad as string }), 'lease.resource');
      await rejects(() => store.release({ ...lease, resource: bad as string }), 'lease.resource');
      await rejects(
        () => store.renewMany([lease, { ...lease, resource: bad as string }]),
        'leases[1].resource',
      );
      await rejects(
        () => store.releaseMany([{ ...lease, resource: bad as string }]),
        'leases[0].resource',
      );
    }
    expect(await store.get('valid')).toMatchObject({ owner: 'a', token: 1 });
  });

  it('accepts names exactly at the byte limits', async () => {
    await setup();
    expect(await store.tryAcquire('x'.repeat(512), 'o'.repeat(256), 5000)).not.toBeNull();
    expect(await store.tryAcquire('é'.repeat(256), 'é'.repeat(128), 5000)).not.toBeNull();
  });

  it('rejects bad owners', async () => {
    await setup();
    for (const bad of ['', 'o'.repeat(257), 'é'.repeat(129), '\udc00', 'a\u0000', 7, null]) {
      await rejects(() => store.tryAcquire('r', bad as string, 5000), 'owner');
      await rejects(() => store.renew({ ...lease, owner: bad as string }), 'lease.owner');
    }
  });

  it('rejects bad TTLs: not an integer, under 100 ms, over 24 h', async () => {
    await setup();
    for (const bad of [99, 0, -1, 86_400_001, 1000.5, NaN, Infinity, '1000', null]) {
      await rejects(() => store.tryAcquire('r', 'a', bad as number), 'ttlMs');
      await rejects(() => store.renew(lease, bad as number), 'ttlMs');
      await rejects(() => store.renewMany([lease], bad as number), 'ttlMs');
      await rejects(() => store.renew({ ...lease, ttlMs: bad as number }), 'lease.ttlMs');
    }
    expect(await store.tryAcquire('r-min', 'a', 100)).not.toBeNull();
    expect(await store.tryAcquire('r-max', 'a', 86_400_000)).not.toBeNull();
  });

  it('rejects bad tokens and non-lease values', async () => {
    await setup();
    for (const bad of [0, -1, 1.5, 2 ** 53, '1', null]) {
      await rejects(() => store.renew({ ...lease, token: bad as number }), 'lease.token');
      await rejects(() => store.release({ ...lease, token: bad as number }), 'lease.token');
    }
    await rejects(() => store.renew(null as unknown as Lease), 'lease');
    await rejects(() => store.release('valid' as unknown as Lease), 'lease');
    await rejects(() => store.renewMany('x' as unknown as Lease[]), 'leases');
    await rejects(() => store.releaseMany([null as unknown as Lease]), 'leases[0]');
  });

  it('rejects bad list options', async () => {
    await setup();
    await rejects(() => store.list({ limit: 0 }), 'limit');
    await rejects(() => store.list({ limit: 1.5 }), 'limit');
    await rejects(() => store.list({ limit: 10_000_000 }), 'limit');
    await rejects(() => store.list({ prefix: 5 as unknown as string }), 'prefix');
    await rejects(() => store.list({ prefix: '\ud800' }), 'prefix');
    await rejects(() => store.list('x' as unknown as object), 'list options');
  });

  it('leaves every record intact after bad input', async () => {
    await setup();
    const before = await store.list();
    await store.renewMany([lease, { ...lease, token: -1 }]).catch(() => {});
    await store.releaseMany([lease, { ...lease, owner: '' }]).catch(() => {});
    expect(await store.list()).toEqual(before);
    expect(await store.renew(lease)).not.toBeNull();
  });

  it('fails clearly after close', async () => {
    const closed = await open();
    await closed.close();
    const error = await closed.tryAcquire('r', 'a', 5000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseError);
    expect((error as LeaseError).code).toBe('STORE_UNAVAILABLE');
    await closed.close(); // idempotent
  });
});
