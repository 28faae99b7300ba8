import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { permitResources } from '../../src/core/permits.js';
import { NatsStore } from '../../src/stores/nats/index.js';
import { describeServer } from '../harness/describe-server.js';
import { NatsServer, natsUnavailable } from '../harness/nats-server.js';

/**
 * A bucket under steady writes to the prefix, where a consumer over the keys may never run out of
 * messages: a list ends once every key there when it began has come by (the store's timeoutMs,
 * 3 s here, would fail it otherwise), and a counting lease's look needs no list.
 */
describeServer('NATS KV under steady writes', natsUnavailable(), () => {
  let server: NatsServer;
  let store: NatsStore;
  let writer: NatsStore;
  let writing = true;
  let busy: Promise<void>;

  beforeAll(async () => {
    server = await NatsServer.start();
    store = await NatsStore.open(`${server.url}?bucket=busy&timeoutMs=3000`);
    writer = await NatsStore.open(`${server.url}?bucket=busy&timeoutMs=3000`);
    // Eight writers renewing their leases under the listed prefix as fast as they can.
    const leases = await Promise.all(
      Array.from({ length: 8 }, (_, i) => writer.tryAcquire(`busy/w${i}`, `w${i}`, 60_000)),
    );
    busy = Promise.all(
      leases.map(async (lease) => {
        while (writing) await writer.renew(lease!);
      }),
    ).then(() => undefined);
  });
  afterAll(async () => {
    writing = false;
    await busy;
    await store?.close();
    await writer?.close();
    await server?.stop();
  });

  it('a list ends with every record there when it began, long before its deadline', async () => {
    await store.tryAcquire('busy/listed', 'me', 60_000);
    const records = await store.list({ prefix: 'busy/' });
    expect(records.map((r) => r.resource)).toEqual([
      'busy/listed',
      ...Array.from({ length: 8 }, (_, i) => `busy/w${i}`),
    ]);
    expect(records.find((r) => r.resource === 'busy/w3')).toMatchObject({ owner: 'w3' });
    expect(await store.list({ prefix: 'busy/none/' })).toEqual([]);
    expect(
      (await store.list({ prefix: 'busy/', after: 'busy/w5' })).map((r) => r.resource),
    ).toEqual(['busy/w6', 'busy/w7']);
  });

  it('acquireFirst over permits, the first held, takes a free one without a list', async () => {
    const permits = permitResources('busy/pool', 3);
    expect(await store.acquireFirst(permits, 'a', 60_000)).toMatchObject({ resource: permits[0] });
    const lists = vi.spyOn(store as unknown as { doList: () => unknown }, 'doList');
    expect(await store.acquireFirst(permits, 'b', 60_000)).toMatchObject({ resource: permits[1] });
    expect(await store.acquireFirst(permits, 'c', 60_000)).toMatchObject({ resource: permits[2] });
    expect(await store.acquireFirst(permits, 'd', 60_000)).toBeNull();
    expect(lists).not.toHaveBeenCalled();
    lists.mockRestore();
  });
});
