import { expect, it } from 'vitest';
import { describeStores, expiryWait, sleep } from './stores.js';

describeStores('fencing tokens', ({ open, reopen, factory, shortTtl }) => {
  it('increase strictly across acquire, release and expiry cycles', async () => {
    const store = await open();
    const tokens: number[] = [];
    for (let i = 0; i < 6; i++) {
      const lease = await store.tryAcquire(
        'cycle',
        `owner-${i % 2}`,
        i % 2 === 0 ? 5000 : shortTtl,
      );
      expect(lease).not.toBeNull();
      tokens.push(lease!.token);
      if (i % 2 === 0) expect(await store.release(lease!)).toBe(true);
      else await sleep(expiryWait(store, shortTtl));
    }
    expect(tokens).toEqual([1, 2, 3, 4, 5, 6]);
    expect((await store.get('cycle'))!.token).toBe(6);
  });

  it('are kept by release: the record stays with an empty owner and expiresAt 0', async () => {
    const store = await open();
    const lease = await store.tryAcquire('kept', 'a', 5000);
    await store.release(lease!);
    expect(await store.get('kept')).toEqual({
      resource: 'kept',
      owner: '',
      token: 1,
      expiresAt: 0,
    });
  });

  it('are independent per resource', async () => {
    const store = await open();
    const a = await store.tryAcquire('r1', 'a', 5000);
    await store.release(a!);
    const a2 = await store.tryAcquire('r1', 'a', 5000);
    const b = await store.tryAcquire('r2', 'a', 5000);
    expect([a2!.token, b!.token]).toEqual([2, 1]);
  });

  it.skipIf(!factory.durable)(
    'continue upward after the store is closed and reopened',
    async () => {
      const store = await open();
      const first = await store.tryAcquire('durable', 'a', 5000);
      await store.release(first!);
      const again = await reopen(store);
      await store.close();
      const second = await again.tryAcquire('durable', 'b', 5000);
      expect(second!.token).toBe(first!.token + 1);
      expect(await again.get('durable')).toMatchObject({ owner: 'b', token: 2 });
    },
  );
});
