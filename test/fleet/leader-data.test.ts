import { afterEach, expect, it } from 'vitest';
import {
  elect,
  ErrorCode,
  MemoryStore,
  observeLeader,
  type Election,
  type LeaderInfo,
} from '../../src/index.js';
import { waitFor } from '../harness/processes.js';

const running: { stop(): unknown }[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});

function candidate(store: MemoryStore, owner: string, data: string): Election {
  const election = elect({
    store,
    name: 'api',
    owner,
    ttlMs: 1000,
    heartbeatMs: 250,
    data,
    onElected: () => {},
  });
  running.push(election);
  return election;
}

it("publishes the leader's data with its term; leader() and observeLeader tell who leads and where", async () => {
  const store = new MemoryStore();
  const seen: (LeaderInfo | null)[] = [];
  const observer = observeLeader(store, 'api', { onChange: (l) => seen.push(l), pollMs: 20 });
  running.push(observer);
  await waitFor('the first look', () => observer.current !== undefined);
  expect(observer.current).toBeNull();

  const a = candidate(store, 'a', 'http://10.0.0.1:8080');
  await waitFor('a to lead', () => a.isLeader());
  await waitFor('a published', async () => (await a.leader())?.data !== null);
  expect(await a.leader()).toMatchObject({ owner: 'a', token: 1, data: 'http://10.0.0.1:8080' });
  const b = candidate(store, 'b', 'http://10.0.0.2:8080');
  expect(await b.leader()).toMatchObject({ owner: 'a', data: 'http://10.0.0.1:8080' });
  await waitFor('the observer to see a', () => observer.current?.owner === 'a');

  // a steps down: b takes over with a higher term, and its own address, never a's.
  await a.stop();
  await waitFor('b to lead', () => b.isLeader());
  await waitFor('b published', async () => (await b.leader())?.data !== null);
  const next = (await b.leader())!;
  expect(next).toMatchObject({ owner: 'b', data: 'http://10.0.0.2:8080' });
  expect(next.token).toBeGreaterThan(1);
  await waitFor('the observer to see b', () => observer.current?.owner === 'b');
  // Every change the observer reported: nobody, a (maybe first without data), then b — and no
  // report ever paired b's term with a's address.
  const owners = seen.map((l) => l?.owner ?? null);
  expect(owners[0]).toBeNull();
  expect(owners).toContain('a');
  expect(owners.at(-1)).toBe('b');
  for (const l of seen)
    if (l?.owner === 'b') expect([null, 'http://10.0.0.2:8080']).toContain(l.data);
  await b.stop();
  await waitFor('nobody to lead', () => observer.current === null);
});

it('refuses data on a store without lease data, and bad data, with typed errors', () => {
  const store = new MemoryStore();
  const plain = Object.create(store, {
    capabilities: { value: { ...store.capabilities, data: false } },
  }) as MemoryStore;
  expect(() => elect({ store: plain, name: 'x', data: 'addr', onElected: () => {} })).toThrow(
    expect.objectContaining({ code: ErrorCode.NOT_SUPPORTED }),
  );
  expect(() => elect({ store, name: 'x', data: 42 as never, onElected: () => {} })).toThrow(
    expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }),
  );
  expect(() => observeLeader(store, 'x', { onChange: 'no' as never })).toThrow(
    expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }),
  );
});
