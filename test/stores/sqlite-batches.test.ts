import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore, type Lease } from '../../src/index.js';
import { BATCH_ROWS } from '../../src/stores/sqlite/sqlite-runner.js';
import { loopTurns } from '../harness/loop-turns.js';
import { tempDir } from '../harness/processes.js';

const dir = tempDir('leasehold-sqlite-batches-');
const opened: SqliteStore[] = [];
afterAll(async () => {
  for (const store of opened.reverse()) await store.close();
  dir.cleanup();
});

let files = 0;
async function open(): Promise<SqliteStore> {
  // synchronous=normal: the fsyncs of each chunk's commit would only make the test slower.
  const store = await SqliteStore.open(`${dir.path}/batches-${++files}.db`, {
    synchronous: 'normal',
  });
  opened.push(store);
  return store;
}

const N = 10_000;
const names = Array.from({ length: N }, (_, i) => `big/${String(i).padStart(5, '0')}`);

describe('SqliteStore batches of 10,000', () => {
  it('acquireMany, renewMany and releaseMany let the event loop run, results in input order', async () => {
    const store = await open();
    // Out of code-point order, so input order and resource order differ.
    const input = [...names].reverse();

    const acquired = await loopTurns(() => store.acquireMany(input, 'me', 60_000));
    expect(acquired.result.map((o) => o.resource)).toEqual(input);
    expect(acquired.result.every((o) => o.lease?.token === 1)).toBe(true);
    const leases = acquired.result.map((o) => o.lease!);

    const renewed = await loopTurns(() => store.renewMany(leases, 90_000));
    expect(renewed.result.map((l) => l?.resource)).toEqual(input);
    expect(renewed.result.every((l) => l?.ttlMs === 90_000)).toBe(true);

    const released = await loopTurns(() => store.releaseMany(leases));
    expect(released.result).toEqual(input.map(() => true));

    for (const [what, run] of Object.entries({ acquired, renewed, released })) {
      // One transaction would leave the interval no turn at all until the batch is done; chunks
      // (of 500 acquisitions, 1,000 renewals or releases) give it one between each. How long a
      // chunk holds the loop is measured in the benchmarks, not asserted here.
      expect(run.turns, what).toBeGreaterThanOrEqual(5);
    }
  });

  it('keeps each resource its own compare-and-set across chunk boundaries, outcomes in order', async () => {
    const store = await open();
    const count = BATCH_ROWS * 2 + 7;
    const input = names.slice(0, count);
    // Someone else holds every third resource, spread over every chunk.
    const theirs = input.filter((_, i) => i % 3 === 0);
    const taken = await store.acquireMany(theirs, 'them', 60_000);
    const outcomes = await store.acquireMany(input, 'me', 60_000);
    expect(outcomes.map((o) => o.resource)).toEqual(input);
    outcomes.forEach((o, i) => {
      if (i % 3 === 0) {
        expect(o.lease, o.resource).toBeNull();
        expect(o.holder).toMatchObject({ resource: o.resource, owner: 'them', token: 1 });
      } else {
        expect(o.lease, o.resource).toMatchObject({ resource: o.resource, owner: 'me', token: 1 });
      }
    });
    // Renewals and releases report per lease, in order: ours succeed, a stale token does not.
    const mixed: Lease[] = outcomes.map(
      (o, i) => o.lease ?? { ...taken[i / 3]!.lease!, token: 99 },
    );
    expect((await store.renewMany(mixed)).map((l) => l !== null)).toEqual(
      input.map((_, i) => i % 3 !== 0),
    );
    expect(await store.releaseMany(mixed)).toEqual(input.map((_, i) => i % 3 !== 0));
  });

  it('lists a long prefix in pages, in resource order, up to the limit', async () => {
    const store = await open();
    await store.acquireMany(names, 'me', 60_000);
    const all = await loopTurns(() => store.list({ prefix: 'big/', limit: 100_000 }));
    expect(all.result.map((r) => r.resource)).toEqual(names);
    // One read of 10,000 records would leave the interval no turn until it is done; how long a
    // page holds the loop is measured in the benchmarks.
    expect(all.turns).toBeGreaterThanOrEqual(3);
    const some = await store.list({ prefix: 'big/', limit: 4321, after: names[10] });
    expect(some.map((r) => r.resource)).toEqual(names.slice(11, 11 + 4321));
  });
});
