import { afterEach, expect, it } from 'vitest';
import {
  ErrorCode,
  LIMITS,
  LeaseClient,
  type LeaseData,
  type LeaseStore,
} from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { rejection } from '../harness/expect-error.js';
import { describeStores, expiryWait, sleep } from './stores.js';

const bytes = (...values: number[]): Uint8Array => new Uint8Array(values);
/** A string of exactly `n` UTF-8 bytes, mostly 3-byte characters. */
const utf8Of = (n: number): string => '€'.repeat(Math.floor(n / 3)) + 'x'.repeat(n % 3);

/** Lease data on every store: kept in the record, written only under the holder's token. */
describeStores('lease data', ({ open, reopen, factory, shortTtl }) => {
  const clients: LeaseClient[] = [];
  const ttlMs = Math.max(2000, (factory.shortTtlMs ?? 120) * 4);
  const clientOn = (store: LeaseStore, owner: string, extra: object = {}): LeaseClient => {
    const client = new LeaseClient({
      store,
      owner,
      ttlMs,
      heartbeatMs: Math.floor(ttlMs / 4),
      ...extra,
    });
    clients.push(client);
    return client;
  };
  afterEach(async () => {
    await Promise.allSettled(clients.splice(0).map((c) => c.close()));
  });

  /** Skips a data test on a store without lease data (test/core/data-not-supported checks those). */
  const withData = (store: LeaseStore): boolean => store.capabilities.data === true;

  it('a grant carries what earlier holders left; written under the token, kept through release and expiry', async (t) => {
    const store = await open();
    if (!withData(store)) return t.skip();
    const first = (await store.tryAcquire('data/a', 'a', 60_000))!;
    expect(first.data ?? null).toBeNull();
    expect(await store.writeData(first, 'offset=41')).toBe(true);
    expect(await store.writeData(first, 'offset=42')).toBe(true);
    expect((await store.get('data/a'))?.data).toBe('offset=42');
    expect(await store.release(first)).toBe(true);
    expect(await store.get('data/a')).toMatchObject({ owner: '', data: 'offset=42' });
    const second = (await store.tryAcquire('data/a', 'b', shortTtl))!;
    expect(second.data).toBe('offset=42');
    expect(await store.writeData(second, bytes(0, 1, 255))).toBe(true);
    await sleep(expiryWait(store, shortTtl));
    // Expired, then taken: the bytes come back as bytes.
    const third = (await store.tryAcquire('data/a', 'c', 60_000))!;
    expect(third.token).toBeGreaterThan(second.token);
    expect(third.data).toEqual(bytes(0, 1, 255));
    expect(third.data).toBeInstanceOf(Uint8Array);
    // null clears it.
    expect(await store.writeData(third, null)).toBe(true);
    expect((await store.get('data/a'))?.data ?? null).toBeNull();
    const [listed] = await store.list({ prefix: 'data/a' });
    expect(listed?.data ?? null).toBeNull();
  });

  it('is refused after a takeover, after a release and under a wrong token, leaving the value as it was', async (t) => {
    const store = await open();
    if (!withData(store)) return t.skip();
    const old = (await store.tryAcquire('data/b', 'a', shortTtl))!;
    expect(await store.writeData(old, 'from a')).toBe(true);
    await sleep(expiryWait(store, shortTtl));
    const next = (await store.tryAcquire('data/b', 'b', 60_000))!;
    expect(next).toMatchObject({ token: old.token + 1, data: 'from a' });
    // The paused ex-holder wakes and writes late: refused, by the store's compare-and-set.
    expect(await store.writeData(old, 'late from a')).toBe(false);
    expect(await store.writeData({ ...next, token: next.token + 1 }, 'forged')).toBe(false);
    expect(await store.writeData({ ...next, owner: 'a' }, 'forged')).toBe(false);
    expect(await store.renew(old, undefined, 'late renew')).toBeNull();
    expect(await store.release(old, 'late release')).toBe(false);
    expect(await store.get('data/b')).toMatchObject({
      owner: 'b',
      token: next.token,
      data: 'from a',
    });
    expect(await store.release(next)).toBe(true);
    expect(await store.writeData(next, 'after release')).toBe(false);
    expect(await store.get('data/b')).toMatchObject({
      owner: '',
      token: next.token,
      data: 'from a',
    });
  });

  it('renew and release carry data in the same call; renewals without data never rewrite it', async (t) => {
    const store = await open();
    if (!withData(store)) return t.skip();
    const lease = (await store.tryAcquire('data/c', 'a', 60_000))!;
    const renewed = (await store.renew(lease, undefined, 'v1'))!;
    expect(renewed.token).toBe(lease.token);
    expect((await store.get('data/c'))?.data).toBe('v1');
    expect(await store.renew(renewed)).not.toBeNull();
    expect(await store.renewMany([renewed, renewed], 5000)).toHaveLength(2);
    expect((await store.get('data/c'))?.data).toBe('v1');
    expect(await store.release(renewed, 'final')).toBe(true);
    expect(await store.get('data/c')).toMatchObject({ owner: '', data: 'final' });
    // Every way of being granted hands the value over.
    const many = await store.acquireMany(['data/c', 'data/c2'], 'b', 60_000);
    expect(many[0]!.lease?.data).toBe('final');
    expect(many[1]!.lease?.data ?? null).toBeNull();
    await store.releaseMany(many.map((o) => o.lease!));
    const group = (await store.acquireAll(['data/c2', 'data/c'], 'c', 60_000))!;
    expect(group.map((l) => l.data ?? null)).toEqual([null, 'final']);
    await store.releaseMany(group);
    const first = (await store.acquireFirst(['data/c'], 'd', 60_000))!;
    expect(first.data).toBe('final');
  });

  it('racing writers of one lease: every write answered, the record holds one of them', async (t) => {
    const store = await open();
    if (!withData(store)) return t.skip();
    const lease = (await store.tryAcquire('data/d', 'a', 60_000))!;
    const values = Array.from({ length: 8 }, (_, i) => `v${i}`);
    expect(await Promise.all(values.map((v) => store.writeData(lease, v)))).toEqual(
      values.map(() => true),
    );
    expect(values).toContain((await store.get('data/d'))?.data);
  });

  it("an ex-holder's late write racing a takeover: landed before the grant (and handed over) or refused", async (t) => {
    const store = await open();
    if (!withData(store)) return t.skip();
    const old = (await store.tryAcquire('data/r', 'a', shortTtl))!;
    expect(await store.writeData(old, 'early')).toBe(true);
    await sleep(expiryWait(store, shortTtl));
    const [late, taken] = await Promise.all([
      store.writeData(old, 'late'),
      store.tryAcquire('data/r', 'b', 60_000),
    ]);
    // Whichever landed first: the new holder sees exactly the last value that landed before its
    // grant, and nothing of the old token lands after it.
    expect(taken!.data).toBe(late ? 'late' : 'early');
    expect(await store.writeData(old, 'later')).toBe(false);
    expect(await store.writeData(taken!, 'b')).toBe(true);
    expect((await store.get('data/r'))?.data).toBe('b');
  });

  it('refuses bad values with INVALID_ARGUMENT naming the limit, writing nothing; the limit itself fits', async (t) => {
    const store = await open();
    if (!withData(store)) return t.skip();
    const lease = (await store.tryAcquire('data/e', 'a', 60_000))!;
    expect(await store.writeData(lease, 'kept')).toBe(true);
    const over = await rejection(store.writeData(lease, utf8Of(LIMITS.dataMaxBytes + 1)));
    expect([over.code, over.message]).toEqual([
      ErrorCode.INVALID_ARGUMENT,
      expect.stringMatching(/4097 bytes, over the limit of 4096 bytes \(LIMITS\.dataMaxBytes\)/),
    ]);
    const overBytes = await rejection(
      store.renew(lease, undefined, new Uint8Array(LIMITS.dataMaxBytes + 1)),
    );
    expect(overBytes.code).toBe(ErrorCode.INVALID_ARGUMENT);
    for (const bad of [42, { a: 1 }, ['x'], true, '\ud800']) {
      const error = await rejection(store.writeData(lease, bad as unknown as LeaseData));
      expect([error.code, error.message]).toEqual([
        ErrorCode.INVALID_ARGUMENT,
        expect.stringMatching(/^data /),
      ]);
    }
    expect((await store.get('data/e'))?.data).toBe('kept');
    const limit = utf8Of(LIMITS.dataMaxBytes);
    expect(await store.writeData(lease, limit)).toBe(true);
    expect((await store.get('data/e'))?.data).toBe(limit);
    const limitBytes = new Uint8Array(LIMITS.dataMaxBytes).map((_, i) => i % 256);
    expect(await store.release(lease, limitBytes)).toBe(true);
    expect((await store.get('data/e'))?.data).toEqual(limitBytes);
  });

  it('a value of exactly LIMITS.dataMaxBytes round-trips, as multi-byte UTF-8 and as bytes', async (t) => {
    const store = await open();
    if (!withData(store)) return t.skip();
    // A second handle knows nothing of this one's writes: it reads what the store kept.
    const other = factory.durable ? await reopen(store) : store;
    const text = utf8Of(LIMITS.dataMaxBytes);
    expect(Buffer.byteLength(text)).toBe(LIMITS.dataMaxBytes);
    const limitBytes = new Uint8Array(LIMITS.dataMaxBytes).map((_, i) => (i * 7) % 256);
    const lease = (await store.tryAcquire('limit', 'a', 60_000))!;
    expect(await store.writeData(lease, text)).toBe(true);
    expect((await other.get('limit'))?.data).toBe(text);
    expect((await other.list({ prefix: 'limit' }))[0]?.data).toBe(text);
    expect(await store.release(lease, limitBytes)).toBe(true);
    const next = (await other.tryAcquire('limit', 'b', 60_000))!;
    expect(next.data).toBeInstanceOf(Uint8Array);
    expect(next.data).toEqual(limitBytes);
    expect((await other.renew(next, undefined, ''))?.data).toBe('');
    expect((await store.get('limit'))?.data).toBe('');
  });

  it('through LeaseClient: lease.data, writeData under a valid lease, release({ data }) for the next holder', async (t) => {
    const store = await open();
    if (!withData(store)) return t.skip();
    const a = clientOn(store, 'a');
    const b = clientOn(store, 'b');
    const lease = (await a.tryAcquire('data/f'))!;
    expect(lease.data).toBeNull();
    await lease.writeData('checkpoint 10');
    expect(lease.data).toBe('checkpoint 10');
    await lease.renew({ data: 'checkpoint 20' });
    expect(lease.data).toBe('checkpoint 20');
    await lease.release({ data: 'checkpoint 30' });
    const next = (await b.tryAcquire('data/f'))!;
    expect(next.data).toBe('checkpoint 30');
    // Option typos and bad values are refused before anything is sent.
    const typo = await rejection(next.renew({ dta: 'x' } as never));
    expect(typo.code).toBe(ErrorCode.INVALID_ARGUMENT);
    const bad = await rejection(next.writeData(7 as never));
    expect(bad.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(next.state).toBe('held');
    expect((await store.get(next.key))?.data).toBe('checkpoint 30');
  });

  it('through LeaseClient: refused with LEASE_LOST after a takeover and past the deadline on a frozen loop, nothing written', async (t) => {
    const store = await open();
    if (!withData(store)) return t.skip();
    const clock = new ManualClock();
    const a = clientOn(store, 'a', { autoRenew: false, clock });
    const lease = (await a.tryAcquire('data/g'))!;
    await lease.writeData('a1');
    // A frozen loop: the deadline passes while nothing runs; the write is refused before sending.
    clock.jump(lease.remainingMs() + 5);
    const late = await rejection(lease.writeData('a2 after the deadline'));
    expect(late.code).toBe(ErrorCode.LEASE_LOST);
    expect(lease.state).toBe('lost');
    expect((await store.get('data/g'))?.data).toBe('a1');
    // A holder whose record was taken over (its own view still valid): the store refuses it.
    const b = clientOn(store, 'b');
    const c = clientOn(store, 'c', { autoRenew: false });
    const held = (await c.tryAcquire('data/h'))!;
    await store.release(held.lease); // taken away behind its back (an operator's release)
    const taker = (await b.tryAcquire('data/h'))!;
    const refused = await rejection(held.writeData('stale'));
    expect(refused.code).toBe(ErrorCode.LEASE_LOST);
    expect(held.state).toBe('lost');
    expect((await store.get('data/h'))?.data ?? null).toBeNull();
    expect(taker.state).toBe('held');
  });
});
