import { afterEach, expect, it } from 'vitest';
import { elect, MemoryStore, type Election, type ElectOptions } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { FaultyStore } from '../harness/faulty-store.js';

const clock = new ManualClock();
const store = new MemoryStore({ clock });
const running: { election: Election; link: FaultyStore }[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    r.link.mode = 'pass';
    r.link.resumeHung();
    await r.election.stop();
  }
});

let elections = 0;
const fresh = (): string => `prio-${++elections}`;

function candidate(
  name: string,
  election: string,
  log: string[],
  options: Partial<ElectOptions> = {},
): { election: Election; link: FaultyStore } {
  const link = new FaultyStore(store);
  const running_ = elect({
    store: link,
    name: election,
    owner: name,
    ttlMs: 1000,
    heartbeatMs: 250,
    clock,
    onElected: (lease) => void log.push(`${name} elected ${lease.token}`),
    onDemoted: (reason) => void log.push(`${name} demoted ${reason}`),
    ...options,
  });
  running.push({ election: running_, link });
  return { election: running_, link };
}

/** Advances the clock in small steps, checking that at most one candidate is leader at any time. */
async function advanceChecking(ms: number, all: Election[]): Promise<void> {
  for (let t = 0; t < ms; t += 25) {
    await clock.advance(25);
    expect(all.filter((e) => e.isLeader()).length).toBeLessThanOrEqual(1);
  }
}

const tokenOf = (line: string | undefined): number => Number(line?.split(' ').at(-1));

it('a candidate of higher priority takes over once it has campaigned for holdOffMs: one handoff, never two leaders', async () => {
  const log: string[] = [];
  const name = fresh();
  const a = candidate('a', name, log, { priority: 1, holdOffMs: 1000 });
  await advanceChecking(100, [a.election]);
  expect(a.election.isLeader()).toBe(true);
  const b = candidate('b', name, log, { priority: 2, holdOffMs: 1000 });
  const all = [a.election, b.election];
  // Seen by the leader at its next heartbeat, b must campaign a whole hold-off first.
  await advanceChecking(800, all);
  expect(a.election.isLeader()).toBe(true);
  expect(log).toEqual([expect.stringMatching(/^a elected \d+$/)]);
  await advanceChecking(1000, all);
  expect(b.election.isLeader()).toBe(true);
  expect(log.slice(1)).toEqual(['a demoted yielded', expect.stringMatching(/^b elected \d+$/)]);
  expect(tokenOf(log[2])).toBeGreaterThan(tokenOf(log[0]));
  // The lower one stays demoted: b keeps leading, and nothing changes hands again.
  await advanceChecking(3000, all);
  expect(b.election.isLeader()).toBe(true);
  expect(log).toHaveLength(3);
  expect((await a.election.leader())?.owner).toBe('b');
});

it('costs one list of the registrations per heartbeat, for the leader and for a candidate that defers', async () => {
  const log: string[] = [];
  const name = fresh();
  const high = candidate('high', name, log, { priority: 2, holdOffMs: 60_000 });
  await advanceChecking(100, [high.election]);
  const low = candidate('low', name, log, { priority: 1, holdOffMs: 60_000 });
  await advanceChecking(500, [high.election, low.election]);
  const before = [high.link.calls.list, low.link.calls.list];
  await advanceChecking(10 * 250, [high.election, low.election]); // ten heartbeats
  const lists = [high.link.calls.list - before[0]!, low.link.calls.list - before[1]!];
  for (const n of lists) expect(n).toBeGreaterThanOrEqual(9);
  for (const n of lists) expect(n).toBeLessThanOrEqual(11);
  // The one deferring never tries for the lease meanwhile.
  expect(low.link.calls.tryAcquire).toBe(1); // its registration
});

it('equal priorities never preempt each other, and a leader without a priority is never preempted', async () => {
  const log: string[] = [];
  const equal = fresh();
  const a = candidate('a', equal, log, { priority: 1, holdOffMs: 500 });
  await advanceChecking(100, [a.election]);
  const b = candidate('b', equal, log, { priority: 1, holdOffMs: 500 });
  await advanceChecking(3000, [a.election, b.election]);
  expect(a.election.isLeader()).toBe(true);

  const plain = fresh();
  const c = candidate('c', plain, log);
  await advanceChecking(100, [c.election]);
  const d = candidate('d', plain, log, { priority: 5, holdOffMs: 500 });
  await advanceChecking(3000, [c.election, d.election]);
  expect(c.election.isLeader()).toBe(true);
  expect(log.filter((l) => l.includes('demoted'))).toEqual([]);
});

it('a preferred candidate that crash-loops faster than the hold-off never takes leadership from a running leader', async () => {
  const log: string[] = [];
  const name = fresh();
  const a = candidate('a', name, log, { priority: 1, holdOffMs: 2500 });
  await advanceChecking(100, [a.election]);
  for (let restart = 0; restart < 4; restart++) {
    // Up for 800 ms, then its calls stop arriving (a crash): its registration lapses after the TTL.
    const b = candidate(`b${restart}`, name, log, { priority: 2, holdOffMs: 2500 });
    await advanceChecking(800, [a.election, b.election]);
    b.link.mode = 'hang';
    await advanceChecking(1500, [a.election, b.election]);
  }
  expect(a.election.isLeader()).toBe(true);
  expect(log).toEqual([expect.stringMatching(/^a elected \d+$/)]);
});

it('a waiting candidate defers to a live candidate of higher priority: it never tries for the lease while that one campaigns', async () => {
  const log: string[] = [];
  const name = fresh();
  // Hold-offs long enough that nobody preempts a: only its stop frees the lease.
  const a = candidate('a', name, log, { priority: 1, holdOffMs: 60_000 });
  await advanceChecking(100, [a.election]);
  const c = candidate('c', name, log, { priority: 3, holdOffMs: 60_000 });
  await advanceChecking(300, [a.election, c.election]);
  // b's store calls for the election's own lease, beside its registration.
  const tries: string[] = [];
  const spy = new Proxy(new FaultyStore(store), {
    get(target, key) {
      if (key === 'tryAcquire') {
        return (resource: string, owner: string, ttlMs: number) => {
          tries.push(resource);
          return target.tryAcquire(resource, owner, ttlMs);
        };
      }
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function'
        ? (value as (...a: unknown[]) => unknown).bind(target)
        : value;
    },
  });
  const b = elect({
    store: spy,
    name,
    owner: 'b',
    ttlMs: 1000,
    heartbeatMs: 250,
    clock,
    priority: 2,
    holdOffMs: 60_000,
    onElected: (lease) => void log.push(`b elected ${lease.token}`),
    onDemoted: (reason) => void log.push(`b demoted ${reason}`),
  });
  running.push({ election: b, link: new FaultyStore(store) });
  const all = [a.election, b, c.election];
  await advanceChecking(1000, all);
  await a.election.stop();
  await advanceChecking(1500, all);
  expect(c.election.isLeader()).toBe(true);
  expect(log.slice(1)).toEqual(['a demoted stopped', expect.stringMatching(/^c elected \d+$/)]);
  expect(tries.filter((r) => r === `election/${name}`)).toEqual([]);
  expect(tries.length).toBeGreaterThan(0); // its registration
  // c stops: b, the highest left, is elected.
  await c.election.stop();
  await advanceChecking(1500, all);
  expect(b.isLeader()).toBe(true);
  expect(tries).toContain(`election/${name}`);
});

it('refuses a priority that is not a finite number, a bad holdOffMs, and a registration name over the limit', () => {
  const base = { store, name: 'bad', onElected: () => {} };
  for (const priority of [Number.NaN, Infinity, '1', null]) {
    expect(() => elect({ ...base, priority: priority as never })).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/^priority/),
      }),
    );
  }
  for (const holdOffMs of [-1, 1.5, '10']) {
    expect(() => elect({ ...base, priority: 1, holdOffMs: holdOffMs as never })).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/^holdOffMs/),
      }),
    );
  }
  expect(() => elect({ ...base, holdOffMs: 100 })).toThrow(/holdOffMs.*needs priority/);
  expect(() =>
    elect({ ...base, name: 'n'.repeat(400), owner: 'o'.repeat(200), priority: 1 }),
  ).toThrow(
    expect.objectContaining({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/^priority.*512/),
    }),
  );
});
