import { expect, it } from 'vitest';
import { describeStores, expiryWait, sleep } from './stores.js';

describeStores('acquire', ({ open, reopen, factory, shortTtl }) => {
  it('grants a free resource with token 1 and records it', async () => {
    const store = await open();
    const lease = await store.tryAcquire('job', 'a', 5000);
    expect(lease).toMatchObject({ resource: 'job', owner: 'a', token: 1, ttlMs: 5000 });
    expect(lease!.expiresAt).toBeGreaterThan(0);
    expect(await store.get('job')).toEqual({
      resource: 'job',
      owner: 'a',
      token: 1,
      expiresAt: lease!.expiresAt,
    });
  });

  it('refuses a live lease to another owner and to the same owner', async () => {
    const store = await open();
    await store.tryAcquire('job', 'a', 5000);
    expect(await store.tryAcquire('job', 'b', 5000)).toBeNull();
    expect(await store.tryAcquire('job', 'a', 5000)).toBeNull();
    expect((await store.get('job'))!.owner).toBe('a');
  });

  it('lets exactly one of 50 concurrent racers win', async () => {
    const store = await open();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => store.tryAcquire('race', `w${i}`, 5000)),
    );
    const winners = results.filter((r) => r !== null);
    expect(winners).toHaveLength(1);
    expect(winners[0]!.token).toBe(1);
    expect((await store.get('race'))!.owner).toBe(winners[0]!.owner);
  });

  it.skipIf(!factory.durable)(
    'lets exactly one racer win across several store handles on the same records',
    async () => {
      const store = await open();
      const handles = [store, ...(await Promise.all([1, 2, 3].map(() => reopen(store))))];
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          handles[i % handles.length]!.tryAcquire('race2', `w${i}`, 5000),
        ),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect((await handles[3]!.get('race2'))!.owner).toBe(winners[0]!.owner);
    },
  );

  it('grants a released resource with the next token', async () => {
    const store = await open();
    const first = await store.tryAcquire('job', 'a', 5000);
    expect(await store.release(first!)).toBe(true);
    const second = await store.tryAcquire('job', 'b', 5000);
    expect(second).toMatchObject({ owner: 'b', token: 2 });
  });

  it('grants an expired resource to another owner with the next token, and not before', async () => {
    const store = await open();
    await store.tryAcquire('job', 'a', shortTtl);
    expect(await store.tryAcquire('job', 'b', 5000)).toBeNull();
    await sleep(expiryWait(store, shortTtl));
    const taken = await store.tryAcquire('job', 'b', 5000);
    expect(taken).toMatchObject({ owner: 'b', token: 2 });
  });

  it('sets expiresAt about ttl after now on the store clock', async () => {
    const store = await open();
    const before = Date.now();
    const lease = await store.tryAcquire('ttl', 'a', 10_000);
    const after = Date.now();
    const record = await store.get('ttl');
    expect(record!.expiresAt).toBe(lease!.expiresAt);
    if (store.capabilities.clock === 'local') {
      // Read on this host's clock during the call, however long the call took.
      expect(lease!.expiresAt).toBeGreaterThanOrEqual(before + 10_000);
      expect(lease!.expiresAt).toBeLessThanOrEqual(after + 10_000);
    }
  });
});
