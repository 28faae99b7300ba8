import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { LeaseClient, openStore, type LeaseStore } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { waitFor } from '../harness/processes.js';

// The waiter's backoff runs on a clock that never moves, so only the store's release notice can
// end its wait: without it, these waits would never end and the tests would time out.
let dir: string;
let store: LeaseStore;
let holder: LeaseClient;
let waiter: LeaseClient;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-wake-'));
  store = await openStore(`sqlite:${join(dir, 'leases.db')}`);
  holder = new LeaseClient({ store, owner: 'holder', ttlMs: 60_000 });
  waiter = new LeaseClient({ store, owner: 'waiter', ttlMs: 60_000, clock: new ManualClock() });
});

afterEach(async () => {
  await waiter.close();
  await holder.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The watchers the file lists: a store keeps a row there while anything of it watches. */
function watchers(file = 'leases.db'): number {
  const db = new Database(join(dir, file), { readonly: true });
  try {
    return (
      db.prepare('SELECT count(*) AS n FROM leasehold_leases_watchers').get() as { n: number }
    ).n;
  } finally {
    db.close();
  }
}

it('a waiting acquire takes the lease when the store announces its release, not at the end of its backoff', async () => {
  const held = (await holder.tryAcquire('job'))!;
  let settled = false;
  const waiting = waiter.acquire('job', { waitMs: 600_000 }).finally(() => (settled = true));
  // Refused, subscribed, and asleep on the clock that never moves.
  await waitFor('the waiter to subscribe', () => watchers() === 1);
  expect(settled).toBe(false);

  await held.release();
  const got = await waiting;
  expect(got).toMatchObject({ resource: 'job', owner: 'waiter', token: held.token + 1 });
  expect(watchers()).toBe(0); // the wait's subscription ended with it
  await got.release();
});

it('a release of another resource does not end the wait, and aborting it ends the subscription', async () => {
  const held = (await holder.tryAcquire('job'))!;
  const other = (await holder.tryAcquire('job-2'))!;
  // The waiter's own handle on the file, counting its attempts: a wake would send it to the
  // store again (and, refused, back to sleep).
  const own = await openStore(`sqlite:${join(dir, 'leases.db')}`);
  let attempts = 0;
  const counted = new Proxy(own, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const bound = (value as (...args: unknown[]) => unknown).bind(target);
      if (property !== 'tryAcquire') return bound;
      return (...args: unknown[]) => (attempts++, bound(...args));
    },
  });
  const clock = new ManualClock();
  const lone = new LeaseClient({ store: counted, owner: 'waiter', ttlMs: 60_000, clock });
  const abort = new AbortController();
  let settled = false;
  const waiting = lone
    .acquire('job', { waitMs: 600_000, signal: abort.signal })
    .finally(() => (settled = true));
  await waitFor('the waiter to subscribe', () => watchers() === 1);
  // Once its watch is in place (`ready`) the waiter asks once more: a release between its first
  // attempt and the subscription would otherwise go unheard.
  await waitFor('the attempt once the watch is in place', () => attempts === 2);
  // A second watch on the waiter's handle hears what its subscription hears, in the same poll.
  const heard: string[] = [];
  const unwatch = own.watch!('job', (event) => heard.push(event.resource));
  await other.release(); // a name that starts with the waited one: not its release
  await waitFor('the release of job-2 to reach the handle', () => heard.includes('job-2'));
  await own.get('job'); // a round trip after it: an attempt sent on that wake would be in first
  expect(attempts).toBe(2);
  expect(settled).toBe(false);
  expect(await store.get('job')).toMatchObject({ owner: 'holder', token: held.token });
  unwatch();

  abort.abort(new Error('gave up'));
  await expect(waiting).rejects.toThrow('gave up');
  expect(watchers()).toBe(0);
  await held.release();
  await lone.close();
  await own.close();
});

it('an acquire granted at once, or that does not wait, subscribes to nothing', async () => {
  let watches = 0;
  const counted = new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const bound = (value as (...args: unknown[]) => unknown).bind(target);
      if (property !== 'watch') return bound;
      return (...args: unknown[]) => {
        watches++;
        return bound(...args);
      };
    },
  });
  const client = new LeaseClient({ store: counted, owner: 'quick', ttlMs: 60_000 });
  try {
    const got = await client.acquire('free', { waitMs: 60_000 });
    await got.release();
    const held = (await holder.tryAcquire('taken'))!;
    await expect(client.acquire('taken', { waitMs: 0 })).rejects.toThrow(/held by another/);
    expect(watches).toBe(0);
    // Refused with time left: now it subscribes, once for the whole wait.
    const waiting = client.acquire('taken', { waitMs: 60_000 });
    await waitFor('the wait to subscribe', () => watches === 1);
    await held.release();
    await (await waiting).release();
    expect(watches).toBe(1);
  } finally {
    await client.close();
  }
});

it('a store closed under a waiting acquire ends the wait with its own error, the subscription gone quietly', async () => {
  const own = await openStore(`sqlite:${join(dir, 'other.db')}`);
  const first = new LeaseClient({ store: own, owner: 'first', ttlMs: 60_000 });
  const second = new LeaseClient({ store: own, owner: 'second', ttlMs: 60_000 });
  const held = (await first.tryAcquire('job'))!;
  const waiting = second.acquire('job', { waitMs: 60_000 });
  await waitFor('the waiter to subscribe', () => watchers('other.db') === 1); // refused, asleep
  await own.close();
  const error = await waiting.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE' });
  expect(String((error as Error).message)).toMatch(/closed/);
  expect(held.state).not.toBe('released');
  await second.close();
  await first.close().catch(() => undefined);
});
