import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Lease } from '../../src/index.js';
import { NatsStore } from '../../src/stores/nats/index.js';
import { describeServer } from '../harness/describe-server.js';
import { sleep } from '../harness/expect-error.js';
import { NatsServer, natsUnavailable } from '../harness/nats-server.js';
import { waitFor } from '../harness/processes.js';

/**
 * Round trips per transition, counted by the server: its monitoring endpoint reports how many
 * messages each client connection sent, and every JetStream request (a read, a conditional write)
 * is one message.
 */
describeServer('NATS store requests', natsUnavailable(), () => {
  let server: NatsServer;
  let store: NatsStore;
  let other: NatsStore;

  beforeAll(async () => {
    server = await NatsServer.start();
    store = await NatsStore.open(`${server.url}?bucket=requests&maxClockSkewMs=0`);
    other = await NatsStore.open(`${server.url}?bucket=requests&maxClockSkewMs=0`);
  });
  afterAll(async () => {
    await store?.close();
    await other?.close();
    await server?.stop();
  });

  /** Messages the server received while `work` ran. */
  const requestsOf = async (work: () => Promise<unknown>): Promise<number> =>
    (await server.receivedDuring(work)).msgs;

  it('acquire is a read and a conditional write (one write after this store released it), refused a read; renew and release one write', async () => {
    let lease: Lease | null = null;
    expect(
      await requestsOf(async () => {
        lease = await store.tryAcquire('job', 'a', 5000);
      }),
    ).toBe(2);
    expect(lease).toMatchObject({ owner: 'a', token: 1 });
    expect(await requestsOf(() => store.tryAcquire('job', 'b', 5000))).toBe(1);
    expect(await requestsOf(() => store.renew(lease!))).toBe(1);
    expect(await requestsOf(() => store.renew(lease!))).toBe(1);
    // Not ours (wrong token): the store knows no write of that grant, reads, and writes nothing.
    expect(await requestsOf(() => store.renew({ ...lease!, token: 7 }))).toBe(1);
    expect(await requestsOf(() => store.release(lease!))).toBe(1);
    expect(await store.get('job')).toMatchObject({ owner: '', token: 1, expiresAt: 0 });
    // This store released it last: the next grant is written on that revision, without a read.
    let next: Lease | null = null;
    expect(
      await requestsOf(async () => {
        next = await store.tryAcquire('job', 'b', 5000);
      }),
    ).toBe(1);
    expect(next).toMatchObject({ owner: 'b', token: 2 });
    await store.release(next!);
    // Someone else wrote the key since: that write is refused, then a read and a write.
    const elsewhere = (await other.tryAcquire('job', 'c', 5000))!;
    expect(elsewhere).toMatchObject({ token: 3 });
    await other.release(elsewhere);
    let after: Lease | null = null;
    expect(
      await requestsOf(async () => {
        after = await store.tryAcquire('job', 'b', 5000);
      }),
    ).toBe(3);
    expect(after).toMatchObject({ owner: 'b', token: 4 });
  });

  it('a renew through another handle reads first; one whose known revision went stale reads and writes again', async () => {
    const lease = (await store.tryAcquire('handles', 'a', 5000))!;
    // `other` never wrote this grant: read, then write.
    expect(await requestsOf(() => other.renew(lease))).toBe(2);
    // `store` knows its own last write, which `other`'s renew moved past: write, refused, read, write.
    let renewed: Lease | null = null;
    expect(
      await requestsOf(async () => {
        renewed = await store.renew(lease);
      }),
    ).toBe(3);
    expect(renewed).toMatchObject({ owner: 'a', token: 1 });
    expect(await requestsOf(() => store.renew(lease))).toBe(1);
  });

  it('batches are one conditional write per lease', async () => {
    const outcomes = await store.acquireMany(['b/1', 'b/2', 'b/3', 'b/4'], 'a', 5000);
    const leases = outcomes.map((o) => o.lease!);
    expect(await requestsOf(() => store.renewMany(leases))).toBe(4);
    expect(await requestsOf(() => store.releaseMany(leases))).toBe(4);
  });

  it('a batch wider than the in-flight window is still one conditional write per lease', async () => {
    const narrow = await NatsStore.open(
      `${server.url}?bucket=requests&maxClockSkewMs=0&concurrency=8`,
    );
    try {
      const names = Array.from({ length: 300 }, (_, i) => `wide/${i}`);
      const leases = (await narrow.acquireMany(names, 'a', 5000)).map((o) => o.lease!);
      let renewed: (Lease | null)[] = [];
      expect(
        await requestsOf(async () => {
          renewed = await narrow.renewMany(leases, 9000);
        }),
      ).toBe(300);
      expect(renewed.map((l) => l?.resource)).toEqual(names);
      expect(renewed.every((l) => l?.ttlMs === 9000 && l.token === 1)).toBe(true);
      let released: boolean[] = [];
      expect(
        await requestsOf(async () => {
          released = await narrow.releaseMany(leases);
        }),
      ).toBe(300);
      expect(released.every((r) => r)).toBe(true);
    } finally {
      await narrow.close();
    }
  });

  it('in a batch, a lease whose known revision went stale is a write, a read and a write; one not ours a read', async () => {
    const leases = (await store.acquireMany(['m/1', 'm/2', 'm/3'], 'a', 5000)).map((o) => o.lease!);
    // Another handle moves m/2 past the revision `store` knows. The pauses make each renewal's
    // expiresAt later than the one before, so none finds its work done already and skips its write.
    await sleep(5);
    await other.renew(leases[1]!);
    await sleep(5);
    const notOurs = { ...leases[2]!, token: 9 };
    let results: (Lease | null)[] = [];
    expect(
      await requestsOf(async () => {
        // m/1 twice: renewed once, both copies answered with it.
        results = await store.renewMany([leases[0]!, leases[1]!, notOurs, leases[0]!]);
      }),
    ).toBe(1 + 3 + 1);
    expect(results.map((l) => l && `${l.resource} ${l.token}`)).toEqual([
      'm/1 1',
      'm/2 1',
      null,
      'm/1 1',
    ]);
    // m/2's revision is known again: one write per lease.
    expect(await requestsOf(() => store.renewMany(leases.slice(0, 2)))).toBe(2);
    expect(await requestsOf(() => store.releaseMany(leases))).toBe(3);
  });

  it('after a release its watch saw, an acquire is one conditional write; a grant seen since drops the note, and a stopped watch all of them', async () => {
    const seen: string[] = [];
    const unwatch = store.watch('seen/', (event) => seen.push(`${event.type} ${event.resource}`));
    await unwatch.ready;
    const saw = (event: string): Promise<void> =>
      waitFor(event, () => seen.filter((e) => e === event).length > 0).then(() => {
        seen.length = 0;
      });
    try {
      await other.release((await other.tryAcquire('seen/a', 'x', 5000))!);
      await saw('released seen/a');
      // Released by another handle, seen by this one's watch: written on that revision, no read.
      let next: Lease | null = null;
      expect(
        await requestsOf(async () => {
          next = await store.tryAcquire('seen/a', 'y', 5000);
        }),
      ).toBe(1);
      expect(next).toMatchObject({ owner: 'y', token: 2 });
      await store.release(next!);
      await saw('released seen/a');
      // Granted to another since, as the watch saw: the note is gone, so a refusal is one read.
      const held = (await other.tryAcquire('seen/a', 'z', 5000))!;
      expect(held.token).toBe(3);
      await saw('acquired seen/a');
      expect(await requestsOf(() => store.tryAcquire('seen/a', 'y', 5000))).toBe(1);
      await other.release(held);
      await saw('released seen/a');
    } finally {
      unwatch();
    }
    // The watch stopped, so its notes went with it (what it saw may have moved on unseen): the
    // next acquire reads, then writes on what it read, with the next token.
    await other.release((await other.tryAcquire('seen/a', 'w', 5000))!);
    let after: Lease | null = null;
    expect(
      await requestsOf(async () => {
        after = await store.tryAcquire('seen/a', 'y', 5000);
      }),
    ).toBe(2);
    expect(after).toMatchObject({ owner: 'y', token: 5 });
  });
});
