import { expect, it } from 'vitest';
import { ErrorCode, MemoryStore, type StoreCapabilities } from '../../src/index.js';
import { rejection } from '../harness/expect-error.js';

/** The memory store's rules, declaring no lease data: what a store without it is held to. */
class NoDataStore extends MemoryStore {
  override readonly capabilities: StoreCapabilities = Object.freeze({
    ...new MemoryStore().capabilities,
    data: false,
  });
}

it('a store without lease data refuses writeData and data-carrying renewals and releases with NOT_SUPPORTED, writing nothing', async () => {
  const store = new NoDataStore();
  const lease = (await store.tryAcquire('job', 'a', 60_000))!;
  for (const call of [
    store.writeData(lease, 'x'),
    store.renew(lease, undefined, 'x'),
    store.release(lease, 'x'),
  ]) {
    const error = await rejection(call);
    expect([error.code, error.retryable]).toEqual([ErrorCode.NOT_SUPPORTED, false]);
  }
  // Bad values are still named as such first.
  const bad = await rejection(store.writeData(lease, 42 as never));
  expect(bad.code).toBe(ErrorCode.INVALID_ARGUMENT);
  expect(await store.get('job')).toEqual({
    resource: 'job',
    owner: 'a',
    token: lease.token,
    expiresAt: lease.expiresAt,
  });
  // Renewals and releases without data work as before.
  expect(await store.renew(lease)).not.toBeNull();
  expect(await store.release(lease)).toBe(true);
});
