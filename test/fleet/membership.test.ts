import { afterEach, describe, expect, it } from 'vitest';
import { LeaseClient, MemoryStore, type LeaseStore } from '../../src/index.js';
import { ExpiryTimers } from '../../src/fleet/expiry-timers.js';
import { FleetReporter } from '../../src/fleet/fleet-reporter.js';
import { LoadBook } from '../../src/fleet/load-book.js';
import type { FleetLayout } from '../../src/fleet/manager-options.js';
import { generationKey, membersPrefix } from '../../src/fleet/members.js';
import { Membership } from '../../src/fleet/membership.js';
import { TakeoverTracker } from '../../src/fleet/takeover-tracker.js';
import { ManualClock } from '../../src/testing/index.js';

const TTL = 12_000;
const BEAT = 3_000;
const prefix = membersPrefix('g');

interface Worker {
  readonly client: LeaseClient;
  readonly membership: Membership;
  readonly loads: LoadBook;
  /** How often the membership asked for a reconcile. */
  changed: number;
}

const clients: LeaseClient[] = [];
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()));
});

function worker(
  store: LeaseStore,
  clock: ManualClock,
  owner: string,
  more: { settleMs?: number; layout?: FleetLayout } = {},
): Worker {
  const client = new LeaseClient({ store, owner, ttlMs: TTL, heartbeatMs: BEAT, clock });
  clients.push(client);
  const report = new FleetReporter(owner, 'g', clock, undefined);
  const loads = new LoadBook(owner, undefined, 0.1, () => clock.monotonic(), TTL);
  const w = { client, loads, changed: 0 } as { -readonly [K in keyof Worker]: Worker[K] };
  const timers = new ExpiryTimers(
    clock,
    { ttlMs: TTL, heartbeatMs: BEAT, graceMs: 0, storeNow: () => w.membership.storeNow() },
    () => undefined,
  );
  const held = () => client.held().filter((lease) => lease !== w.membership.lease);
  w.membership = new Membership({
    client,
    store,
    clock,
    prefix: more.layout?.membersPrefix ?? prefix,
    maxLeases: Infinity,
    capacity: 1,
    layout: more.layout,
    settleMs: more.settleMs ?? 0,
    loads,
    takeovers: new TakeoverTracker(owner, report),
    timers,
    changed: () => void w.changed++,
    reconciling: () => false,
    stopping: () => false,
    held,
    heldCount: () => held().length,
  });
  return w;
}

function fleet(): { clock: ManualClock; store: MemoryStore } {
  const clock = new ManualClock();
  return { clock, store: new MemoryStore({ clock }) };
}

const ids = (members: readonly { id: string }[]): string[] => members.map((m) => m.id).sort();

describe('Membership', () => {
  it('joins one slot under the group prefix, announces it, and refuses a second live worker with the same id', async () => {
    const { clock, store } = fleet();
    const a = worker(store, clock, 'a');
    await a.membership.join();
    const slot = a.membership.lease!;
    expect(slot.resource).toMatch(/^leasehold\/members\/g\/@[0-9a-f]{8}$/);
    expect(a.membership.covers(slot.resource)).toBe(true);
    expect(a.membership.covers('shard/1')).toBe(false);
    expect((await store.get(generationKey(prefix)))?.token).toBe(1);
    await a.membership.join(); // held: nothing to do
    expect(a.membership.lease).toBe(slot);
    await expect(worker(store, clock, 'a').membership.join()).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const b = worker(store, clock, 'b');
    await b.membership.join();
    expect(b.membership.lease!.resource).not.toBe(slot.resource);
    expect((await store.get(generationKey(prefix)))?.token).toBe(2);
    expect(ids(await a.membership.current())).toEqual(['a', 'b']);
  });

  it('counts itself a member before it joined, so a first read already has a share for it', async () => {
    const { clock, store } = fleet();
    const a = worker(store, clock, 'a');
    await a.membership.join();
    const b = worker(store, clock, 'b');
    expect(ids(await b.membership.current())).toEqual(['a', 'b']);
  });

  it('tells who joined since the shares were last dealt, and whether members only left', () => {
    const { clock, store } = fleet();
    const { membership } = worker(store, clock, 'a');
    const m = (...names: string[]) => names.map((id) => ({ id, limit: Infinity }));
    expect(membership.isNewView('k1')).toBe(true);
    expect([...membership.newcomers(m('a', 'b'))]).toEqual([]); // nobody, at the first dealing
    expect(membership.noteDealt(m('a', 'b'), 'k1')).toBe(false);
    expect(membership.isNewView('k1')).toBe(false);
    expect(membership.size).toBe(2);
    expect([...membership.newcomers(m('a', 'b', 'c'))]).toEqual(['c']);
    expect(membership.noteDealt(m('a', 'b', 'c'), 'k2')).toBe(false);
    expect([...membership.newcomers(m('a'))]).toEqual([]);
    expect(membership.noteDealt(m('a'), 'k3')).toBe(true);
    expect(membership.size).toBe(1);
  });

  it('settles only once the membership stayed the same for settleMs', async () => {
    const { clock, store } = fleet();
    const a = worker(store, clock, 'a', { settleMs: 500 });
    await a.membership.join();
    let settledAt: number | undefined;
    const settling = a.membership.settle().then(() => (settledAt = clock.monotonic()));
    await clock.advance(200);
    await worker(store, clock, 'b').membership.join(); // changes the membership mid-wait
    await clock.advance(300); // the first look: changed
    expect(settledAt).toBeUndefined();
    await clock.advance(500); // the second look: unchanged
    await settling;
    expect(settledAt).toBe(1_000);
  });

  it('in a bucketed fleet refuses a live member of another bucket count, unless it holds buckets already', async () => {
    const { clock, store } = fleet();
    const layout = (buckets: number): FleetLayout => ({
      membersPrefix: 'leasehold/bucket-members/g/',
      buckets,
    });
    const eight = worker(store, clock, 'eight', { layout: layout(8) });
    await eight.membership.join();
    const four = worker(store, clock, 'four', { layout: layout(4) });
    await four.membership.join();
    const members = await four.membership.current();
    expect(members.find((m) => m.id === 'eight')?.buckets).toBe(8);
    expect(() => four.membership.checkLayout(members)).toThrow(/buckets.*is 4 here.*"eight"/);
    await four.client.tryAcquire('leasehold/buckets/g/4/0');
    expect(() => four.membership.checkLayout(members)).not.toThrow();
  });

  it('publishes a moved load in its membership record at a renewal, and asks for a reconcile', async () => {
    const { clock, store } = fleet();
    const a = worker(store, clock, 'a');
    await a.membership.join();
    await a.client.tryAcquire('shard/1');
    a.loads.report('shard/1', 5);
    expect(a.changed).toBe(0);
    await clock.advance(BEAT);
    const record = await store.get(a.membership.lease!.resource);
    expect(JSON.parse(record!.data as string)).toEqual({ o: 'a', l: { 'shard/1': 5 } });
    expect(a.changed).toBe(1);
    await clock.advance(BEAT); // nothing moved: nothing written, nobody asked
    expect(a.changed).toBe(1);
  });

  it('without watch, reads the generation record at each membership renewal and asks for a reconcile when it moved', async () => {
    const { clock, store } = fleet();
    expect(store.capabilities.watch).toBe(false);
    const a = worker(store, clock, 'a');
    await a.membership.join();
    const others = ['b', 'c', 'd', 'e'].map((id) => worker(store, clock, id));
    for (const w of others) await w.membership.join();
    await a.membership.current(); // a small fleet's read (it was one member): no generation kept
    await a.membership.current(); // five members now: the generation is read and kept
    await clock.advance(BEAT);
    expect(a.changed).toBe(0); // unchanged since that read
    await worker(store, clock, 'f').membership.join();
    await clock.advance(BEAT);
    expect(a.changed).toBe(1);
  });

  it('estimates the store clock from its own membership grants on a store that keeps its own time', async () => {
    const clock = new ManualClock();
    const memory = new MemoryStore({ clock });
    // The store's time runs 5 s ahead of this worker's (its own clock, as PostgreSQL's).
    const ahead = new ManualClock(clock.now() + 5_000);
    const store: LeaseStore = Object.assign(new MemoryStore({ clock: ahead }), {
      capabilities: { ...memory.capabilities, clock: 'store' as const },
    });
    const a = worker(store, clock, 'a');
    expect(a.membership.storeNow()).toBe(clock.now());
    await a.membership.join();
    expect(a.membership.storeNow()).toBe(clock.now() + 5_000);
  });
});
