import { afterEach, beforeEach, expect, it } from 'vitest';
import {
  LeaseClient,
  MemoryStore,
  type HeldLease,
  type Lease,
  type LeaseRef,
  type StoreCapabilities,
  type Unwatch,
  type WatchListener,
} from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { sleep } from '../harness/expect-error.js';
import { waitFor } from '../harness/processes.js';

/**
 * A memory store that announces releases as a server store does: each release notice goes to the
 * watchers after the release's answer (as Redis's PUBLISH reaches a subscriber), or only when the
 * test says (`announce`). Every acquisition attempt is counted by caller.
 */
class AnnouncingStore extends MemoryStore {
  override readonly capabilities: StoreCapabilities;
  readonly attempts: string[] = [];
  /** Announce releases by themselves (after answering), or leave it to `announce`. */
  auto = true;
  /** How long an acquisition's answer takes (decided at once, answered later). */
  answerAfterMs = 0;
  private readonly watchers = new Set<{ prefix: string; listener: WatchListener }>();

  constructor(ordered: boolean) {
    super();
    this.capabilities = Object.freeze({ ...new MemoryStore().capabilities, watch: true, ordered });
  }

  watch(prefix: string, listener: WatchListener): Unwatch {
    const entry = { prefix, listener };
    this.watchers.add(entry);
    // No `ready`: a watch live at once, as a custom store written before `ready` was in the
    // contract returns it (the client treats such a watch as live).
    return (() => void this.watchers.delete(entry)) as Unwatch;
  }

  get watching(): number {
    return this.watchers.size;
  }

  announce(resource: string): void {
    for (const { prefix, listener } of [...this.watchers])
      if (resource.startsWith(prefix)) listener({ type: 'released', resource });
  }

  override tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    this.attempts.push(owner);
    const answer = super.tryAcquire(resource, owner, ttlMs);
    const ms = this.answerAfterMs;
    return ms > 0 ? answer.then(async (lease) => (await sleep(ms), lease)) : answer;
  }

  override acquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    this.attempts.push(owner);
    return super.acquireFirst(resources, owner, ttlMs);
  }

  override async release(lease: LeaseRef): Promise<boolean> {
    const released = await super.release(lease);
    if (released && this.auto) setTimeout(() => this.announce(lease.resource), 5);
    return released;
  }
}

// Waiters back off on a clock that never moves: only a wake can send one to the store again.
let store: AnnouncingStore;
let holder: LeaseClient;
let waiters: LeaseClient[];
const open = (ordered: boolean): void => {
  store = new AnnouncingStore(ordered);
  holder = new LeaseClient({ store, owner: 'holder', ttlMs: 60_000 });
  waiters = ['w0', 'w1', 'w2'].map(
    (owner) => new LeaseClient({ store, owner, ttlMs: 60_000, clock: new ManualClock() }),
  );
};

beforeEach(() => open(false));
afterEach(async () => {
  for (const w of waiters) await w.close();
  await holder.close();
  await store.close();
});

/** Waits until waiter `i` has its answer (a lease or an error). */
const granted = (got: unknown[], i: number): Promise<void> =>
  waitFor(`waiter ${i}'s answer`, () => got[i] !== undefined, 5000, 2);

/** Starts the waiters one after another, each refused once and asleep before the next. */
async function queue(wait: (client: LeaseClient, i: number) => Promise<HeldLease>) {
  const got: (HeldLease | Error | undefined)[] = [];
  const waiting: Promise<void>[] = [];
  for (const [i, w] of waiters.entries()) {
    waiting.push(
      wait(w, i).then(
        (lease) => void (got[i] = lease),
        (error: Error) => void (got[i] = error),
      ),
    );
    await sleep(20);
  }
  return { got, waiting };
}

it('a release wakes one waiter, the one that came first; the next release the next one', async () => {
  const held = (await holder.tryAcquire('job'))!;
  const { got } = await queue((w) => w.acquire('job', { waitMs: 600_000 }));
  // w0 was refused; w1 and w2 found it asleep on the name and queued behind it without asking.
  expect(store.attempts).toEqual(['holder', 'w0']);
  expect(store.watching).toBe(1); // one subscription for the line, not one per waiter

  await held.release();
  await granted(got, 0);
  expect(store.attempts.slice(2)).toEqual(['w0']); // one attempt, no herd
  const first = got[0] as HeldLease;
  expect(first).toMatchObject({ owner: 'w0', token: held.token + 1 });
  expect(got[1]).toBeUndefined();

  await first.release();
  await granted(got, 1);
  expect(store.attempts.slice(3)).toEqual(['w1']);
  await (got[1] as HeldLease).release();
  await granted(got, 2);
  // Each release woke the next in line alone: a herd woken by an earlier one would have asked too.
  expect(store.attempts.slice(2)).toEqual(['w0', 'w1', 'w2']);
  await (got[2] as HeldLease).release();
  expect(store.watching).toBe(0); // the last waiter gone, the subscription went with it
});

it('on permits: each permit released wakes one waiter of the name', async () => {
  const a = await holder.acquire('pool', { permits: 2 });
  const b = await holder.acquire('pool', { permits: 2 });
  const { got } = await queue((w) => w.acquire('pool', { permits: 2, waitMs: 600_000 }));
  const asked = store.attempts.length;
  await a.release();
  await granted(got, 0);
  expect(store.attempts.slice(asked)).toEqual(['w0']);
  expect(got[0]).toMatchObject({ resource: 'pool', permit: a.permit });
  expect([got[1], got[2]]).toEqual([undefined, undefined]);
  await b.release();
  await granted(got, 1);
  expect(got[1]).toMatchObject({ resource: 'pool', permit: b.permit });
  expect(got[2]).toBeUndefined();
  await (got[0] as HeldLease).release();
  await granted(got, 2);
  expect(got[2]).toMatchObject({ resource: 'pool', permit: a.permit, owner: 'w2' });
  expect(store.attempts.slice(asked)).toEqual(['w0', 'w1', 'w2']); // one waiter per release
  for (const l of got) await (l as HeldLease).release();
});

it('a woken waiter that gives up before trying passes its wake to the next', async () => {
  store.auto = false;
  const held = (await holder.tryAcquire('job'))!;
  const abort = new AbortController();
  const { got, waiting } = await queue((w, i) =>
    w.acquire('job', { waitMs: 600_000, ...(i === 0 ? { signal: abort.signal } : {}) }),
  );
  await held.release();
  store.announce('job'); // wakes w0 …
  abort.abort(new Error('w0 gave up')); // … which leaves before its next attempt
  await granted(got, 1);
  expect(String(got[0])).toMatch(/w0 gave up/);
  expect(store.attempts.slice(2)).toEqual(['w1']);
  expect(got[1]).toMatchObject({ owner: 'w1' });
  expect(got[2]).toBeUndefined();
  await (got[1] as HeldLease).release();
  store.announce('job');
  await Promise.all(waiting.slice(1));
  expect(store.attempts.slice(2)).toEqual(['w1', 'w2']); // the first notice woke w1 alone
  await (got[2] as HeldLease).release();
});

it('a waiter arriving while others of this process sleep on the name queues behind them; tryAcquire still asks', async () => {
  const held = (await holder.tryAcquire('job'))!;
  const { got } = await queue((w) => w.acquire('job', { waitMs: 600_000 }));
  expect(store.attempts).toEqual(['holder', 'w0']);
  // A new caller that does not wait asks the store as always.
  const late = new LeaseClient({ store, owner: 'late', ttlMs: 60_000 });
  expect(await late.tryAcquire('job')).toBeNull();
  expect(store.attempts.slice(2)).toEqual(['late']);
  await expect(late.acquire('job', { waitMs: 0 })).rejects.toThrow(/held by another/);
  expect(store.attempts.slice(3)).toEqual(['late']);
  await late.close();
  // Released: the waiters take it in the order they came, each once.
  await held.release();
  await granted(got, 0);
  await (got[0] as HeldLease).release();
  await granted(got, 1);
  await (got[1] as HeldLease).release();
  await granted(got, 2);
  expect(store.attempts.slice(4)).toEqual(['w0', 'w1', 'w2']);
  await (got[2] as HeldLease).release();
});

it('a notice that finds nobody asleep is kept for the next sleep, never lost', async () => {
  store.auto = false;
  const held = (await holder.tryAcquire('job'))!;
  let got: HeldLease | undefined;
  const waiting = waiters[0]!.acquire('job', { waitMs: 600_000 }).then((l) => (got = l));
  await waitFor('w0 to be refused once', () => store.attempts.length === 2);
  await sleep(20); // and asleep
  store.answerAfterMs = 60;
  store.announce('job'); // a stray notice: w0 tries again, its answer (refused) slow to come
  await waitFor('w0 to try again', () => store.attempts.length === 3);
  expect(store.attempts.slice(2)).toEqual(['w0']);
  await held.release();
  store.announce('job'); // w0 is not asleep: the notice waits for its next sleep
  store.answerAfterMs = 0;
  await waiting;
  expect(store.attempts.slice(2)).toEqual(['w0', 'w0']);
  expect(got).toMatchObject({ owner: 'w0', token: held.token + 1 });
  await got!.release();
});

it('on a store that applies calls in order, the waiter is woken as the release is sent, once', async () => {
  await store.close();
  for (const w of waiters) await w.close();
  await holder.close();
  open(true);
  const held = (await holder.tryAcquire('job'))!;
  const { got } = await queue((w) => w.acquire('job', { waitMs: 600_000 }));
  store.auto = false;
  const released = held.release();
  await released;
  // Woken before the release was answered and before any notice: it tried and was granted.
  await sleep(0);
  await sleep(0);
  expect(store.attempts.slice(2)).toEqual(['w0']);
  expect(got[0]).toMatchObject({ owner: 'w0' });
  // The notice of that release arrives later: acted on already, it wakes nobody else (a wake
  // would send w1 to the store, and show below as an attempt before its grant).
  store.announce('job');
  expect(got[1]).toBeUndefined();
  await (got[0] as HeldLease).release();
  store.announce('job'); // this release's own notice, again already acted on
  await granted(got, 1);
  expect(store.attempts.slice(3)).toEqual(['w1']);
  expect(got[1]).toMatchObject({ owner: 'w1' });
  await (got[1] as HeldLease).release();
  await granted(got, 2);
  expect(store.attempts.slice(3)).toEqual(['w1', 'w2']);
  await (got[2] as HeldLease).release();
});
