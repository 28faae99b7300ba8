import { afterEach, expect, it } from 'vitest';
import type { LeaseError } from '../../src/index.js';
import { LeaseClient, type HeldLease, type LeaseStore } from '../../src/index.js';
import { FAIR_SLOTS, QUEUE_MARK, TICKET_MARK, slotOwner } from '../../src/client/fair-line.js';
import { rejection } from '../harness/expect-error.js';
import { waitFor } from '../harness/processes.js';
import { describeStores, sleep } from './stores.js';

/** Counting leases, all-or-nothing groups and fair waiting through `LeaseClient`, on every store. */
describeStores('lease family (permits, groups, fair waiting)', ({ open, factory, shortTtl }) => {
  const clients: LeaseClient[] = [];
  // etcd's leases last whole seconds: TTLs here are long enough for every store.
  const ttlMs = Math.max(2000, (factory.shortTtlMs ?? 120) * 4);
  const clientOn = (store: LeaseStore, owner: string): LeaseClient => {
    const client = new LeaseClient({ store, owner, ttlMs, heartbeatMs: Math.floor(ttlMs / 4) });
    clients.push(client);
    return client;
  };
  afterEach(async () => {
    await Promise.allSettled(clients.splice(0).map((c) => c.close()));
  });
  /** Waits until `n` waiters hold a place in `name`'s line. */
  const inLine = (store: LeaseStore, name: string, n: number): Promise<void> =>
    waitFor(
      `${n} in the line of ${name}`,
      async () => {
        const line = await store.list({ prefix: `${name}${QUEUE_MARK}`, limit: FAIR_SLOTS });
        return line.filter((r) => r.owner !== '').length === n;
      },
      15_000,
      10,
    );

  it('permits: five callers on three permits — three hold, each a different permit, the rest are refused', async () => {
    const store = await open();
    const five = Array.from({ length: 5 }, (_, i) => clientOn(store, `w${i}`));
    const got = await Promise.all(five.map((c) => c.tryAcquire('sem', { permits: 3 })));
    const held = got.filter((l): l is HeldLease => l !== null);
    expect(held).toHaveLength(3);
    expect(held.map((l) => l.resource)).toEqual(['sem', 'sem', 'sem']);
    expect(held.map((l) => l.permit).sort()).toEqual([0, 1, 2]);
    for (const lease of held) {
      expect(lease.token).toBe(1);
      expect(await store.get(lease.key)).toMatchObject({ owner: lease.owner, token: lease.token });
    }
    // A released permit goes to the next caller, with that permit's next token.
    const freed = held[0]!;
    await freed.release();
    const next = await clientOn(store, 'late').acquire('sem', { permits: 3, waitMs: 5000 });
    expect([next.permit, next.token]).toEqual([freed.permit, 2]);
  });

  it('permits: a waiter is granted the permit a holder gives back', async () => {
    const store = await open();
    const a = await clientOn(store, 'a').acquire('pool', { permits: 2 });
    await clientOn(store, 'b').acquire('pool', { permits: 2 });
    const waiting = clientOn(store, 'c').acquire('pool', { permits: 2, waitMs: 10_000 });
    await sleep(50);
    await a.release();
    const c = await waiting;
    expect([c.permit, c.token]).toEqual([a.permit, a.token + 1]);
  });

  it('permits: 1 is the exclusive lease on the name itself', async () => {
    const store = await open();
    const one = await clientOn(store, 'a').tryAcquire('solo', { permits: 1 });
    expect([one?.key, one?.permit]).toEqual(['solo', 0]);
    expect(await clientOn(store, 'b').tryAcquire('solo')).toBeNull();
    expect(await store.get('solo')).toMatchObject({ owner: 'a', token: 1 });
  });

  it('permits: bad counts are refused with INVALID_ARGUMENT and write nothing', async () => {
    const store = await open();
    const client = clientOn(store, 'a');
    for (const bad of [0, -1, 1.5, NaN, '3', 1001, Number.MAX_SAFE_INTEGER + 2]) {
      const error = await rejection(client.tryAcquire('bad', { permits: bad as number }));
      expect([error.code, error.message]).toEqual([
        'INVALID_ARGUMENT',
        expect.stringContaining('permits'),
      ]);
      const waited = await rejection(client.acquire('bad', { permits: bad as number, waitMs: 0 }));
      expect(waited.code).toBe('INVALID_ARGUMENT');
    }
    const typo = await rejection(client.tryAcquire('bad', { permit: 2 } as never));
    expect(typo.message).toContain('did you mean "permits"');
    const long = await rejection(client.tryAcquire('n'.repeat(510), { permits: 20 }));
    expect(long.message).toContain('too long for 20 permits');
    expect(await store.list({ prefix: 'bad' })).toEqual([]);
    expect(await store.list({ prefix: 'nnn' })).toEqual([]);
  });

  it('groups: every member or none; a crossing group is refused whole; release frees all at once', async () => {
    const store = await open();
    const a = clientOn(store, 'a');
    const b = clientOn(store, 'b');
    const group = await a.tryAcquireAll(['acct/1', 'acct/2']);
    expect(group?.resources).toEqual(['acct/1', 'acct/2']);
    expect(group?.tokens).toEqual({ 'acct/1': 1, 'acct/2': 1 });
    expect(group?.isValid()).toBe(true);
    expect(await b.tryAcquireAll(['acct/3', 'acct/2'])).toBeNull();
    expect(b.size).toBe(0);
    expect(await store.get('acct/3').then((r) => r?.owner ?? '')).toBe('');
    const waiting = b.acquireAll(['acct/3', 'acct/2'], { waitMs: 10_000 });
    await sleep(50);
    await group!.release();
    expect(group!.signal.aborted).toBe(true);
    expect((group!.signal.reason as LeaseError).code).toBe('LEASE_RELEASED');
    const theirs = await waiting;
    expect(theirs.tokens['acct/2']).toBeGreaterThan(1);
    expect(await store.get('acct/1')).toMatchObject({ owner: '' });
  });

  it('groups: duplicates, an empty list and an over-long list are refused before any store call', async () => {
    const store = await open();
    const client = clientOn(store, 'a');
    for (const [bad, says] of [
      [['g', 'g'], 'repeats'],
      [[], 'at least one'],
      [Array.from({ length: 101 }, (_, i) => `g${i}`), 'groupMaxSize'],
    ] as const) {
      const error = await rejection(client.tryAcquireAll(bad as unknown as string[]));
      expect([error.code, error.message]).toEqual([
        'INVALID_ARGUMENT',
        expect.stringContaining(says),
      ]);
    }
    expect(await store.list({ prefix: 'g' })).toEqual([]);
  });

  it('fair: waiters are granted in arrival order, one at a time', async () => {
    const store = await open();
    const holder = await clientOn(store, 'holder').acquire('hot');
    const order: string[] = [];
    const waiters = ['w1', 'w2', 'w3', 'w4'].map((owner) => clientOn(store, owner));
    const done: Promise<void>[] = [];
    for (const client of waiters) {
      done.push(
        client.acquire('hot', { fair: true, waitMs: 30_000 }).then(async (lease) => {
          order.push(client.owner);
          await sleep(10);
          await lease.release();
        }),
      );
      await inLine(store, 'hot', done.length); // each arrival is in line before the next
    }
    await holder.release();
    await Promise.all(done);
    expect(order).toEqual(['w1', 'w2', 'w3', 'w4']);
    // Nobody is left in line.
    const line = await store.list({ prefix: `hot${QUEUE_MARK}`, limit: FAIR_SLOTS });
    expect(line.filter((r) => r.owner !== '')).toEqual([]);
  });

  it('fair: a waiter that died blocks the line only until its place lapses', async () => {
    const store = await open();
    const holder = await clientOn(store, 'holder').acquire('line');
    // Two arrivals came and went: the next ticket is 3.
    for (let i = 0; i < 2; i++)
      await store.release((await store.tryAcquire(`line${TICKET_MARK}`, 'x', ttlMs))!);
    // A waiter that took a place with an earlier ticket and died: nobody renews its slot.
    const deadTtl = Math.max(shortTtl, 600);
    const dead = await store.tryAcquire(`line${QUEUE_MARK}000`, slotOwner(1, 'dead'), deadTtl);
    const tDead = Date.now();
    expect(dead).not.toBeNull();
    const waiting = clientOn(store, 'alive').acquire('line', { fair: true, waitMs: 30_000 });
    await sleep(50);
    await holder.release();
    const lease = await waiting;
    expect(lease.owner).toBe('alive');
    // Served only once the dead place could have lapsed, not at the release.
    expect(Date.now() - tDead).toBeGreaterThanOrEqual(deadTtl - 50);
    expect(await store.get(`line${QUEUE_MARK}000`)).toMatchObject({ token: dead!.token });
  });

  it('fair: a waiter that gives up leaves the line at once', async () => {
    const store = await open();
    const holder = await clientOn(store, 'holder').acquire('quit');
    const controller = new AbortController();
    const quitter = clientOn(store, 'quitter').acquire('quit', {
      fair: true,
      signal: controller.signal,
    });
    await inLine(store, 'quit', 1);
    const second = clientOn(store, 'second').acquire('quit', { fair: true, waitMs: 30_000 });
    await inLine(store, 'quit', 2);
    controller.abort(new Error('gave up'));
    await expect(quitter).rejects.toThrow('gave up');
    await holder.release();
    const lease = await second;
    expect(lease.owner).toBe('second');
  });

  it('fair: a non-fair tryAcquire is not held back by the line', async () => {
    const store = await open();
    const holder = await clientOn(store, 'holder').acquire('barge');
    const waiting = clientOn(store, 'fair').acquire('barge', { fair: true, waitMs: 30_000 });
    await inLine(store, 'barge', 1);
    // Released and taken by a plain caller before the head of the line tries again.
    await holder.release();
    const barger = await clientOn(store, 'barger').tryAcquire('barge');
    if (barger) {
      expect(barger.owner).toBe('barger');
      await barger.release();
    }
    expect((await waiting).owner).toBe('fair');
  });
});
