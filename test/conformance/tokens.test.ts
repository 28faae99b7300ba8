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

  it.skipIf(!factory.durable)(
    'rise by one per grant while two handles take turns acquiring and releasing',
    async () => {
      const store = await open();
      const other = await reopen(store);
      const handles = [store, other, other, store, store, other];
      for (const [i, h] of handles.entries()) {
        const lease = await h.tryAcquire('turns', `o${i % 2}`, 5000);
        expect(lease).toMatchObject({ token: i + 1 });
        // The other handle sees the grant and cannot take it.
        const peer = h === store ? other : store;
        expect(await peer.tryAcquire('turns', 'x', 5000)).toBeNull();
        expect(await peer.get('turns')).toMatchObject({ owner: `o${i % 2}`, token: i + 1 });
        expect(await h.release(lease!)).toBe(true);
      }
    },
  );

  it.skipIf(!factory.durable)(
    'rise by one per grant when a batch and single calls of two handles interleave',
    async () => {
      const store = await open();
      const other = await reopen(store);
      const names = ['m0', 'm1', 'm2'];
      for (let round = 1; round <= 3; round++) {
        const taker = round % 2 === 0 ? other : store;
        const got = await taker.acquireMany(names, 'batch', 5000);
        expect(got.map((o) => o.lease?.token)).toEqual([round, round, round]);
        const renewed = await (taker === store ? other : store).renewMany(got.map((o) => o.lease!));
        expect(renewed.map((l) => l?.token)).toEqual([round, round, round]);
        expect(await store.releaseMany(got.map((o) => o.lease!))).toEqual([true, true, true]);
      }
      expect((await other.get('m1'))!.token).toBe(3);
    },
  );

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
