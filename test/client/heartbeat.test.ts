import { afterEach, describe, expect, it } from 'vitest';
import { driftMs, LeaseError, type LeaseClient } from '../../src/index.js';
import type { FaultyStore } from '../harness/faulty-store.js';
import { rig } from './setup.js';

const open: LeaseClient[] = [];
const stores: FaultyStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) {
    store.mode = 'pass';
    store.resumeHung();
  }
  await Promise.allSettled(open.splice(0).map((c) => c.close()));
});

function track<T extends { client: LeaseClient; other: LeaseClient; store: FaultyStore }>(r: T): T {
  open.push(r.client, r.other);
  stores.push(r.store);
  return r;
}

describe('heartbeats', () => {
  it('keep a lease alive for many TTLs with its token unchanged', async () => {
    const { clock, real, client, other } = track(rig());
    const lease = (await client.tryAcquire('job'))!;
    const renewed: number[] = [];
    lease.on('renewed', () => renewed.push(clock.monotonic()));
    for (let i = 0; i < 20; i++) {
      await clock.advance(500);
      expect(await other.tryAcquire('job')).toBeNull();
    }
    expect(lease.state).toBe('held');
    expect(lease.signal.aborted).toBe(false);
    expect(lease.token).toBe(1);
    expect(renewed.length).toBeGreaterThanOrEqual(35); // 10 s at one renewal per 250 ms
    expect((await real.get('job'))!.expiresAt).toBeGreaterThan(clock.now());
  });

  it('renew every held lease with one renewMany per beat', async () => {
    const { clock, store, client } = track(rig());
    for (let i = 0; i < 5; i++) await client.tryAcquire(`r${i}`);
    await clock.advance(250);
    expect(store.calls.renewMany).toBe(1);
    expect(store.batchSizes).toEqual([5]);
    await clock.advance(750);
    expect(store.calls.renewMany).toBe(4);
    expect(store.batchSizes.every((n) => n === 5)).toBe(true);
    expect(store.calls.renew).toBe(0);
  });

  it('set validUntil from the moment the request was sent: tSent + ttl − drift − skew', async () => {
    const { clock, store, client } = track(rig({ maxClockSkewMs: 30 }));
    store.mode = 'hang';
    const pending = client.tryAcquire('job');
    await clock.advance(100); // the reply takes 100 ms
    store.mode = 'pass';
    store.resumeHung();
    const lease = (await pending)!;
    expect(lease.validUntil).toBe(0 + 1000 - driftMs(1000) - 30);
    expect(driftMs(1000)).toBe(12);
  });

  it('fire the signal exactly at the deadline when the store stops answering', async () => {
    const { clock, store, client } = track(rig());
    const lease = (await client.tryAcquire('job'))!;
    const deadline = lease.validUntil;
    store.mode = 'hang';
    let abortedAt = -1;
    lease.signal.addEventListener('abort', () => (abortedAt = clock.monotonic()));
    await clock.advance(deadline - 1);
    expect(lease.signal.aborted).toBe(false);
    expect(lease.state).toBe('at-risk');
    await clock.advance(1);
    expect(lease.signal.aborted).toBe(true);
    expect(abortedAt).toBe(deadline);
    expect(lease.state).toBe('lost');
    expect(lease.signal.reason).toBeInstanceOf(LeaseError);
    expect((lease.signal.reason as LeaseError).code).toBe('LEASE_LOST');
    expect(client.held()).toEqual([]);
  });

  it('warn with at-risk once less than a third of the validity window is left', async () => {
    const { clock, store, client } = track(rig());
    const lease = (await client.tryAcquire('job'))!;
    const events: [string, number][] = [];
    lease.on('at-risk', (reason) => events.push([reason, clock.monotonic()]));
    store.mode = 'hang';
    await clock.advance(800);
    expect(events).toHaveLength(1);
    // Acquired at 0: the window is validUntil − 0 = ttl − drift − skew.
    expect(events[0]![1]).toBeCloseTo(lease.validUntil - lease.validUntil / 3, 6);
  });

  it('retry failed renewals until one lands, and recover to held', async () => {
    const { clock, store, client } = track(rig());
    const lease = (await client.tryAcquire('job'))!;
    const states: string[] = [];
    lease.on('at-risk', () => states.push('at-risk'));
    lease.on('renewed', () => states.push('renewed'));
    store.mode = 'fail';
    // Beats at 250 ms; retries after 100 and 200 ms (±25 % jitter): a third attempt by 625 ms.
    await clock.advance(650);
    const attempts = store.calls.renewMany;
    expect(attempts).toBeGreaterThanOrEqual(3); // retried faster than the heartbeat
    expect(lease.state).toBe('at-risk');
    store.mode = 'pass';
    await clock.advance(300);
    expect(lease.state).toBe('held');
    expect(lease.signal.aborted).toBe(false);
    expect(states[0]).toBe('at-risk');
    expect(states.at(-1)).toBe('renewed');
  });

  it('report a lease lost at its deadline when every retry fails, never later', async () => {
    const { clock, store, client } = track(rig());
    const lease = (await client.tryAcquire('job'))!;
    store.mode = 'fail';
    await clock.advance(lease.validUntil - 1);
    expect(lease.state).toBe('at-risk');
    await clock.advance(1);
    expect(lease.state).toBe('lost');
    expect((lease.signal.reason as LeaseError).message).toMatch(/deadline/);
  });

  it('report a lease lost as soon as the store says it is no longer ours', async () => {
    const { clock, real, client } = track(rig());
    const lease = (await client.tryAcquire('job'))!;
    await real.release(lease.lease); // someone forced it free
    await real.tryAcquire('job', 'thief', 1000);
    await clock.advance(250);
    expect(lease.state).toBe('lost');
    expect((lease.signal.reason as LeaseError).code).toBe('LEASE_LOST');
    expect(clock.monotonic()).toBeLessThan(lease.validUntil);
  });

  it('isValid() is false past the deadline even when no timer could run (frozen event loop)', async () => {
    const { clock, client } = track(rig());
    const lease = (await client.tryAcquire('job'))!;
    expect(lease.isValid()).toBe(true);
    clock.jump(2000); // a pause longer than the TTL: no timer ran
    expect(lease.state).toBe('held');
    expect(lease.isValid()).toBe(false);
    expect(lease.remainingMs()).toBe(0);
    await clock.advance(0);
    expect(lease.state).toBe('lost');
  });

  it('declare a lease lost before renewing it when the loop wakes past the deadline', async () => {
    const { clock, store, client } = track(rig());
    const lease = (await client.tryAcquire('job'))!;
    clock.jump(5000);
    await clock.advance(0);
    expect(lease.state).toBe('lost');
    expect(store.batchSizes).toEqual([]);
  });

  it('release a lease that a late renewal extended after it was declared lost', async () => {
    const { clock, store, real, client } = track(rig());
    const lease = (await client.tryAcquire('job'))!;
    store.mode = 'hang';
    await clock.advance(1000);
    expect(lease.state).toBe('lost');
    store.mode = 'pass';
    store.resumeHung(); // the renewal sent long ago lands now
    await clock.advance(0);
    expect(lease.state).toBe('lost');
    expect(await real.get('job')).toMatchObject({ owner: '', token: 1 });
  });

  it('with autoRenew off, renew nothing by itself, let renew() extend, and still fire at the deadline', async () => {
    const { clock, store, client } = track(rig({ autoRenew: false }));
    const lease = (await client.tryAcquire('job'))!;
    await clock.advance(500);
    expect(store.calls.renewMany + store.calls.renew).toBe(0);
    const before = lease.validUntil;
    await lease.renew();
    expect(lease.validUntil).toBe(before + 500);
    await clock.advance(1000);
    expect(lease.state).toBe('lost');
    await expect(lease.renew()).rejects.toMatchObject({ code: 'LEASE_LOST' });
  });

  it('renew() rejects with LEASE_LOST when the store no longer has it', async () => {
    const { real, client } = track(rig({ autoRenew: false }));
    const lease = (await client.tryAcquire('job'))!;
    await real.release(lease.lease);
    await expect(lease.renew()).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(lease.signal.aborted).toBe(true);
  });

  it('renew() rejects with the store error and marks the lease at-risk', async () => {
    const { store, client } = track(rig({ autoRenew: false }));
    const lease = (await client.tryAcquire('job'))!;
    store.mode = 'fail';
    await expect(lease.renew()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(lease.state).toBe('at-risk');
    store.mode = 'pass';
    await lease.renew();
    expect(lease.state).toBe('held');
  });

  it('a listener that throws neither hides other losses nor stops the watchdog', async () => {
    const { clock, store, client } = track(rig());
    const a = (await client.tryAcquire('a'))!;
    const b = (await client.tryAcquire('b'))!;
    store.mode = 'hang';
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown): void => void uncaught.push(e);
    process.prependListener('uncaughtException', onUncaught);
    let first = true;
    client.on('lost', () => {
      if (first) {
        first = false;
        throw new Error('a bug in user code');
      }
    });
    try {
      await clock.advance(1000);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect([a.state, b.state]).toEqual(['lost', 'lost']);
    expect(b.signal.aborted).toBe(true);
    expect(uncaught).toHaveLength(1); // reported, not swallowed
  });

  it('never hands out a lease whose answer arrived after its deadline', async () => {
    const { clock, store, real, client } = track(rig());
    store.mode = 'hang';
    const pending = client.tryAcquire('job');
    await clock.advance(1200); // the store answers 1.2 s after the request left; the TTL is 1 s
    store.mode = 'pass';
    store.resumeHung();
    expect(await pending).toBeNull();
    expect(client.held()).toEqual([]);
    expect(await real.get('job')).toMatchObject({ owner: '', token: 1 }); // given back at once
  });

  it('a renewal that never returns does not stop the next ones', async () => {
    const { clock, store, client } = track(rig());
    const lease = (await client.tryAcquire('job'))!;
    store.mode = 'hang';
    await clock.advance(600); // the beat at 250 ms never gets an answer
    store.mode = 'pass'; // the store is back; that one call still hangs
    await clock.advance(350); // two beats of patience end at 750 ms, then a retry goes out
    expect(store.calls.renewMany).toBeGreaterThanOrEqual(2);
    expect(lease.state).toBe('held');
    expect(lease.validUntil).toBeGreaterThan(clock.monotonic() + 500);
  });
});
