import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { LIMITS, SqliteStore, type Lease } from '../../src/index.js';
import { FAIR_SLOTS, QUEUE_MARK } from '../../src/client/fair-line.js';
import { permitResources } from '../../src/core/permits.js';
import type { SqliteDatabase, SqliteStatement } from '../../src/stores/sqlite/sqlite-driver.js';
import { ManualClock } from '../../src/testing/index.js';
import { rejection } from '../harness/expect-error.js';
import { tempDir } from '../harness/processes.js';
import { shuffled } from '../harness/shuffled.js';

// acquireAll and acquireFirst on SQLite: each one IMMEDIATE transaction run in one synchronous
// step, deciding expiry on the caller's clock with the maxClockSkewMs allowance, as tryAcquire.

const dir = tempDir('leasehold-sqlite-groups-');
const opened: { close(): unknown }[] = [];
afterAll(async () => {
  for (const handle of opened.reverse()) await handle.close();
  dir.cleanup();
});

let files = 0;
const freshFile = (): string => `${dir.path}/groups-${++files}.db`;

async function open(path: string, options: Parameters<typeof SqliteStore.open>[1] = {}) {
  const store = await SqliteStore.open(path, options);
  opened.push(store);
  return store;
}

/** A second, plain connection to the file: another process, in effect. */
function connect(path: string): Database.Database {
  const db = new Database(path);
  opened.push(db);
  return db;
}

const slots = (name: string): string[] =>
  Array.from({ length: FAIR_SLOTS }, (_, i) => `${name}${QUEUE_MARK}${String(i).padStart(3, '0')}`);

interface Counts {
  /** IMMEDIATE transactions begun (not counting savepoints inside one). */
  transactions: number;
  /** Runs of the single acquire's statement. */
  acquires: number;
  /** Runs of the live-record probe. */
  probes: number;
  /** Runs of any other statement. */
  others: number;
}

/** A store whose connection counts transactions and statement runs. */
function counting(): { store: SqliteStore; counts: Counts } {
  const db = new Database(freshFile());
  const counts: Counts = { transactions: 0, acquires: 0, probes: 0, others: 0 };
  const kind = (sql: string): keyof Counts =>
    sql.includes('RETURNING token')
      ? 'acquires'
      : sql.includes('SELECT 1 AS held')
        ? 'probes'
        : 'others';
  const wrapped: SqliteDatabase = {
    name: db.name,
    memory: db.memory,
    prepare(sql: string): SqliteStatement {
      const statement = db.prepare(sql);
      const k = kind(sql);
      return {
        run: (...p: unknown[]) => (counts[k]++, statement.run(...p)),
        all: (...p: unknown[]) => (counts[k]++, statement.all(...p)),
        get: (...p: unknown[]) => (counts[k]++, statement.get(...p)),
      };
    },
    exec: (sql) => db.exec(sql),
    pragma: (sql, options) => db.pragma(sql, options),
    transaction: ((fn: (...args: never[]) => unknown) => {
      const tx = db.transaction(fn);
      const plain = (...args: never[]): unknown => tx(...args);
      // Nested in another transaction, it is a savepoint of that one: not a transaction of its own.
      const immediate = (...args: never[]): unknown => (
        (counts.transactions += db.inTransaction ? 0 : 1),
        tx.immediate(...args)
      );
      return Object.assign(plain, { immediate });
    }) as SqliteDatabase['transaction'],
    close: () => db.close(),
  };
  const store = new SqliteStore(wrapped);
  opened.push(store);
  return { store, counts };
}

/** What `call` cost: transactions and statement runs. */
async function cost<T>(counts: Counts, call: () => Promise<T>): Promise<[T, Counts]> {
  const before = { ...counts };
  const result = await call();
  return [
    result,
    {
      transactions: counts.transactions - before.transactions,
      acquires: counts.acquires - before.acquires,
      probes: counts.probes - before.probes,
      others: counts.others - before.others,
    },
  ];
}

describe('SqliteStore.acquireAll', () => {
  it('declares groups of up to LIMITS.groupMaxSize as one atomic call', async () => {
    const store = await open(freshFile());
    expect(store.capabilities.atomicGroupMax).toBe(LIMITS.groupMaxSize);
  });

  it('takes or refuses a group of 2, 10 and atomicGroupMax in one transaction', async () => {
    const { store, counts } = counting();
    const measured: Record<string, Counts> = {};
    for (const size of [2, 10, store.capabilities.atomicGroupMax]) {
      const names = Array.from({ length: size }, (_, i) => `g${size}/${i}`);
      const [leases, granted] = await cost(counts, () => store.acquireAll(names, 'a', 30_000));
      measured[`acquireAll(${size}) granted`] = granted;
      expect(leases?.map((l) => [l.resource, l.token])).toEqual(names.map((n) => [n, 1]));
      // Each member probed, then each taken: one transaction, nothing else.
      expect(granted).toEqual({ transactions: 1, acquires: size, probes: size, others: 0 });
      await store.releaseMany(leases!);
      await store.tryAcquire(names.at(-1)!, 'other', 30_000);
      const [refused, counted] = await cost(counts, () => store.acquireAll(names, 'a', 30_000));
      measured[`acquireAll(${size}) refused`] = counted;
      expect(refused).toBeNull();
      // The live member is probed last: no acquire statement ran at all.
      expect(counted).toEqual({ transactions: 1, acquires: 0, probes: size, others: 0 });
    }
    console.log('SQLite transactions and statements per group:', measured);
  });

  it('a refused group writes nothing: no record created, no token raised, seen by get and list', async () => {
    const path = freshFile();
    const store = await open(path);
    const released = (await store.tryAcquire('r/released', 'b', 60_000))!;
    await store.release(released);
    const theirs = (await store.tryAcquire('r/held', 'b', 60_000))!;
    const names = ['r/new', 'r/released', 'r/held', 'r/zz-new'];
    const before = await store.list({ prefix: 'r/' });
    const version = (db: Database.Database): unknown => db.pragma('data_version', { simple: true });
    const other = connect(path);
    const seen = version(other);
    expect(await store.acquireAll(names, 'a', 5000)).toBeNull();
    expect(await store.acquireAll([...names].reverse(), 'a', 5000)).toBeNull();
    expect(await store.list({ prefix: 'r/' })).toEqual(before);
    expect(await store.get('r/new')).toBeNull();
    expect(await store.get('r/released')).toMatchObject({ owner: '', token: released.token });
    expect(await store.get('r/held')).toEqual(pick(theirs));
    // Not a byte of the file changed: another connection sees no commit.
    expect(version(other)).toBe(seen);
  });

  it('treats a member as expired only past expiresAt + maxClockSkewMs on the caller clock', async () => {
    const clock = new ManualClock();
    const store = await open(freshFile(), { clock, maxClockSkewMs: 50 });
    const held = (await store.tryAcquire('edge/b', 'them', 1000))!;
    await clock.advance(1000 + 50); // now = expiresAt + skew: still live
    expect(await store.acquireAll(['edge/a', 'edge/b'], 'me', 1000)).toBeNull();
    expect(await store.get('edge/a')).toBeNull();
    expect(await store.acquireFirst(['edge/b'], 'me', 1000)).toBeNull();
    await clock.advance(1); // now = expiresAt + skew + 1: expired
    const leases = (await store.acquireAll(['edge/a', 'edge/b'], 'me', 1000))!;
    expect(leases.map((l) => [l.resource, l.token, l.expiresAt])).toEqual([
      ['edge/a', 1, clock.now() + 1000],
      ['edge/b', held.token + 1, clock.now() + 1000],
    ]);
  });

  it('a failure part-way through writes nothing and comes out as a LeaseError', async () => {
    const path = freshFile();
    const table = 'boom_leases';
    const store = await open(path, { table });
    connect(path).exec(
      `CREATE TRIGGER boom BEFORE INSERT ON "${table}" WHEN new.resource = 'c/boom'
       BEGIN SELECT RAISE(ABORT, 'no such resource allowed'); END`,
    );
    const error = await rejection(store.acquireAll(['c/1', 'c/2', 'c/boom', 'c/3'], 'me', 5000));
    expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', false]);
    expect(error.message).toMatch(/SQLite acquireAll failed: no such resource allowed/);
    const first = await rejection(store.acquireFirst(['c/boom', 'c/1'], 'me', 5000));
    expect(first.message).toMatch(/SQLite acquireFirst failed: no such resource allowed/);
    expect(await store.list({ prefix: 'c/' })).toEqual([]);
    expect((await store.acquireAll(['c/1', 'c/2'], 'me', 5000))?.map((l) => l.token)).toEqual([
      1, 1,
    ]);
  });
});

describe('SqliteStore.acquireFirst', () => {
  it('takes the first free of 5 permits or 256 fair-line slots in one transaction', async () => {
    const { store, counts } = counting();
    const measured: Record<string, Counts> = {};
    for (const [label, prefix, names] of [
      ['5 permits', 'sem', permitResources('sem', 5)],
      [`${FAIR_SLOTS} slots`, 'line', slots('line')],
    ] as const) {
      const [first, none] = await cost(counts, () => store.acquireFirst(names, 'a', 30_000));
      measured[`${label}: none written`] = none;
      expect(first).toMatchObject({ resource: names[0], token: 1 });
      expect(none).toEqual({ transactions: 1, acquires: 1, probes: 0, others: 0 });
      const rest = (await store.acquireMany(names.slice(1), 'a', 30_000)).map((o) => o.lease!);
      await store.release(rest.at(-1)!);
      const [last, lastCost] = await cost(counts, () => store.acquireFirst(names, 'b', 30_000));
      measured[`${label}: the last free`] = lastCost;
      expect(last).toMatchObject({ resource: names.at(-1), owner: 'b', token: 2 });
      expect(lastCost).toEqual({ transactions: 1, acquires: names.length, probes: 0, others: 0 });
      const [nothing, full] = await cost(counts, () => store.acquireFirst(names, 'c', 30_000));
      measured[`${label}: none free`] = full;
      expect(nothing).toBeNull();
      expect(full).toEqual({ transactions: 1, acquires: names.length, probes: 0, others: 0 });
      // A held candidate's statement wrote nothing: every token is where it was.
      const tokens = (await store.list({ prefix })).map((r) => r.token);
      expect(tokens).toEqual(names.map((_, i) => (i === names.length - 1 ? 2 : 1)));
    }
    console.log('SQLite transactions and statements per acquireFirst:', measured);
  });

  it('acquireFirst calls over permits asked together commit with the single transitions, in order', async () => {
    const { store, counts } = counting();
    const permits = permitResources('co', 3);
    const held = (await store.tryAcquire('co/other', 'h', 30_000))!;
    const [result, cost1] = await cost(counts, () =>
      Promise.all([
        ...Array.from({ length: 5 }, (_, i) => store.acquireFirst(permits, `c${i}`, 30_000)),
        store.release(held),
        store.tryAcquire('co/other', 'late', 30_000),
      ]),
    );
    expect(cost1.transactions).toBe(1); // one commit for all seven
    const grants = result.slice(0, 5) as (Lease | null)[];
    expect(grants.map((g) => g && [g.resource, g.owner])).toEqual([
      [permits[0], 'c0'],
      [permits[1], 'c1'],
      [permits[2], 'c2'],
      null,
      null,
    ]);
    expect(result[5]).toBe(true);
    expect(result[6]).toMatchObject({ resource: 'co/other', owner: 'late', token: 2 });
    // The 256 slots of a fair line go alone (a longer step), as before.
    const [, alone] = await cost(counts, () =>
      Promise.all([
        store.acquireFirst(slots('co/line'), 'x', 30_000),
        store.tryAcquire('co/y', 'y', 30_000),
      ]),
    );
    expect(alone.transactions).toBe(1); // the slots' own; the tryAcquire in autocommit
  });

  // How long that step holds the event loop is measured by `npm run bench` (section stalls).
  it(`refuses over LIMITS.permitsMax (${LIMITS.permitsMax}) held candidates in one transaction, one statement per candidate at most, changing nothing`, async () => {
    const { store, counts } = counting();
    const names = permitResources('wide', LIMITS.permitsMax);
    await store.acquireMany(names, 'a', 60_000);
    const before = await store.list({ prefix: 'wide', limit: LIMITS.permitsMax });
    const [result, spent] = await cost(counts, () => store.acquireFirst(names, 'b', 60_000));
    expect(result).toBeNull();
    expect(spent.transactions).toBe(1);
    expect(spent.acquires + spent.probes + spent.others).toBeLessThanOrEqual(names.length);
    expect(await store.list({ prefix: 'wide', limit: LIMITS.permitsMax })).toEqual(before);
  });
});

describe('SqliteStore groups and permits over time and across connections', () => {
  it('waits out another connection’s write lock without holding the event loop', async () => {
    const path = freshFile();
    const store = await open(path);
    const other = connect(path);
    other.exec('BEGIN IMMEDIATE');
    setTimeout(() => other.exec('COMMIT'), 200);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    try {
      const [group, first] = await Promise.all([
        store.acquireAll(['w/a', 'w/b'], 'me', 5000),
        store.acquireFirst(['w/a', 'w/c'], 'me', 5000),
      ]);
      expect(group?.map((l) => l.token)).toEqual([1, 1]);
      expect(first).toMatchObject({ resource: 'w/c', token: 1 });
    } finally {
      clearInterval(ticker);
    }
    expect(ticks).toBeGreaterThan(5);
    const quick = await open(path, { busyTimeoutMs: 50 });
    other.exec('BEGIN IMMEDIATE');
    try {
      const error = await rejection(quick.acquireAll(['w/x', 'w/y'], 'me', 5000));
      expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
      expect(error.message).toMatch(/SQLite acquireAll failed \(database busy\)/);
      const busy = await rejection(quick.acquireFirst(['w/x'], 'me', 5000));
      expect(busy.message).toMatch(/SQLite acquireFirst failed \(database busy\)/);
    } finally {
      other.exec('COMMIT');
    }
    expect(await store.list({ prefix: 'w/x' })).toEqual([]);
  });

  it('groups racing over crossing sets from two stores on one file never share a member', async () => {
    const path = freshFile();
    const handles = [await open(path), await open(path)];
    const names = Array.from({ length: 12 }, (_, i) => `x/${String(i).padStart(2, '0')}`);
    const tokens = new Map<string, number>();
    for (let round = 0; round < 12; round++) {
      const sets = Array.from({ length: 8 }, (_, k) =>
        shuffled(names, round * 31 + k).slice(0, 2 + ((round + k) % 5)),
      );
      const results = await Promise.all([
        ...sets.map((set, k) => handles[k % 2]!.acquireAll(set, `g${k}`, 60_000)),
        handles[1]!
          .tryAcquire(names[round % names.length]!, 's', 60_000)
          .then((l) => (l ? [l] : null)),
        handles[0]!.acquireFirst(shuffled(names, round), 'f', 60_000).then((l) => (l ? [l] : null)),
      ]);
      const owners = new Map<string, string>();
      for (const leases of results) {
        for (const lease of leases ?? []) {
          expect(owners.get(lease.resource), `${lease.resource} granted twice`).toBeUndefined();
          owners.set(lease.resource, lease.owner);
          expect(lease.token).toBeGreaterThan(tokens.get(lease.resource) ?? 0);
          tokens.set(lease.resource, lease.token);
        }
      }
      // The file holds exactly what was granted: no member of a refused group was written.
      for (const name of names) {
        const record = await handles[round % 2]!.get(name);
        const live = record && record.owner !== '' ? record.owner : undefined;
        expect([name, live]).toEqual([name, owners.get(name)]);
        if (record) expect(record.token).toBe(tokens.get(name));
      }
      await handles[0]!.releaseMany(results.flatMap((leases) => leases ?? []));
    }
  });

  it('acquireFirst racing from two stores on one file never gives one permit twice nor more than N', async () => {
    const path = freshFile();
    const handles = [await open(path), await open(path)];
    for (let round = 0; round < 8; round++) {
      const names = permitResources(`sem${round % 2 === 0 ? '' : round}`, 5);
      const callers = Array.from({ length: 12 }, (_, k) =>
        handles[k % 2]!.acquireFirst(shuffled(names, round * 7 + k), `c${k}`, 60_000),
      );
      const granted = (await Promise.all(callers)).filter((l): l is Lease => l !== null);
      expect(new Set(granted.map((l) => l.resource)).size).toBe(granted.length);
      // Each caller's transaction sees every commit before it: all five go, no more.
      expect(granted.length).toBe(names.length);
      for (const lease of granted)
        expect(await handles[1]!.get(lease.resource)).toEqual(pick(lease));
      await handles[1]!.releaseMany(granted);
    }
  });
});

function pick({ resource, owner, token, expiresAt }: Lease) {
  return { resource, owner, token, expiresAt };
}
