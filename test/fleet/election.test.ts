import { afterEach, expect, it } from 'vitest';
import { elect, MemoryStore, type Election } from '../../src/index.js';
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

function candidate(name: string, log: string[]) {
  const link = new FaultyStore(store);
  const election = elect({
    store: link,
    name: 'scheduler',
    owner: name,
    ttlMs: 1000,
    heartbeatMs: 250,
    clock,
    onElected: (lease) => void log.push(`${name} elected ${lease.token}`),
    onDemoted: (reason) => void log.push(`${name} demoted ${reason}`),
  });
  running.push({ election, link });
  return { election, link };
}

async function advanceChecking(ms: number, all: Election[]): Promise<void> {
  for (let t = 0; t < ms; t += 25) {
    await clock.advance(25);
    expect(all.filter((e) => e.isLeader()).length).toBeLessThanOrEqual(1);
  }
}

it('elects exactly one of two candidates, hands over on stop, and takes over after a crash', async () => {
  const log: string[] = [];
  const a = candidate('a', log);
  const b = candidate('b', log);
  const all = [a.election, b.election];
  await advanceChecking(100, all);
  expect(all.filter((e) => e.isLeader())).toHaveLength(1);
  const [leader, follower] = a.election.isLeader() ? [a, b] : [b, a];
  const firstToken = leader.election.lease!.token;

  // The leader crashes (its store calls never arrive): it is demoted at its own deadline,
  // and the follower is elected once the lease has expired, with a higher token.
  leader.link.mode = 'hang';
  await advanceChecking(2500, all);
  expect(leader.election.isLeader()).toBe(false);
  expect(follower.election.isLeader()).toBe(true);
  expect(follower.election.lease!.token).toBe(firstToken + 1);
  expect(log).toContain(`${leader === a ? 'a' : 'b'} demoted lost`);

  // The new leader steps down: the lease is released, and the old one (back online) takes over fast.
  leader.link.mode = 'pass';
  leader.link.resumeHung();
  await follower.election.stop();
  expect(log.at(-1)).toBe(`${follower === a ? 'a' : 'b'} demoted stopped`);
  await advanceChecking(1200, all);
  expect(leader.election.isLeader()).toBe(true);
  expect(leader.election.lease!.token).toBe(firstToken + 2);
});

it('rejects an election without onElected', () => {
  expect(() => elect({ store, name: 'x', onElected: undefined as never })).toThrow(/onElected/);
});

it('pauses between campaigns when onElected keeps failing, instead of spinning', async () => {
  const demotions: string[] = [];
  const election = elect({
    store,
    name: 'crashing',
    ttlMs: 1000,
    heartbeatMs: 250,
    clock,
    onElected: () => {
      throw new Error('boom');
    },
    onDemoted: (reason) => void demotions.push(reason),
  });
  let ticked = false;
  setImmediate(() => (ticked = true)); // the event loop still turns
  await clock.advance(1000);
  expect(ticked).toBe(true);
  expect(demotions.every((r) => r === 'failed')).toBe(true);
  expect(demotions.length).toBeGreaterThanOrEqual(2);
  expect(demotions.length).toBeLessThanOrEqual(5); // one campaign per 250 ms pause
  await election.stop();
});
