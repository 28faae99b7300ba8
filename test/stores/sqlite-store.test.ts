import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore, SqliteStore, type Clock, type LeaseStore } from '../../src/index.js';
import { statements } from '../../src/stores/sqlite/sqlite-ops.js';
import { ManualClock } from '../../src/testing/index.js';
import { rejection } from '../harness/expect-error.js';
import { loopTurns } from '../harness/loop-turns.js';
import { tempDir } from '../harness/processes.js';

const dir = tempDir('leasehold-sqlite-store-');
const opened: { close(): unknown }[] = [];
afterAll(async () => {
  for (const handle of opened.reverse()) await handle.close();
  dir.cleanup();
});

let files = 0;
function freshFile(): string {
  return `${dir.path}/store-${++files}.db`;
}

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

/** A clock whose wall time moves 1 ms every time it is read. */
function tickingClock(): Clock & { reads: number } {
  const base = new ManualClock();
  const clock = {
    reads: 0,
    now: () => base.now() + clock.reads++,
    monotonic: () => base.monotonic(),
    setTimeout: base.setTimeout.bind(base),
  };
  return clock;
}

describe('SqliteStore.acquireMany', () => {
  it('decides the whole batch on one reading of the clock', async () => {
    const clock = tickingClock();
    const store = await open(freshFile(), { clock });
    const outcomes = await store.acquireMany(['a', 'b', 'c', 'd'], 'me', 1000);
    const expiries = outcomes.map((o) => o.lease!.expiresAt);
    expect(new Set(expiries).size).toBe(1);
    expect(clock.reads).toBe(1);
  });

  it('treats a record as expired only past expiresAt + maxClockSkewMs on the caller clock', async () => {
    const clock = new ManualClock();
    const path = freshFile();
    const store = await open(path, { clock, maxClockSkewMs: 50 });
    const held = (await store.tryAcquire('edge', 'them', 1000))!;
    const other = (await store.tryAcquire('past', 'them', 1000))!;
    await clock.advance(1000 + 50); // now = expiresAt + skew: still live
    const [atEdge] = await store.acquireMany(['edge'], 'me', 1000);
    expect(atEdge!.lease).toBeNull();
    expect(atEdge!.holder).toEqual({
      resource: 'edge',
      owner: 'them',
      token: held.token,
      expiresAt: held.expiresAt,
    });
    await clock.advance(1); // now = expiresAt + skew + 1: expired
    const outcomes = await store.acquireMany(['past', 'edge', 'new'], 'me', 1000);
    expect(outcomes.map((o) => [o.resource, o.lease?.token, o.holder])).toEqual([
      ['past', other.token + 1, undefined],
      ['edge', held.token + 1, undefined],
      ['new', 1, undefined],
    ]);
    expect(outcomes[0]!.lease!.expiresAt).toBe(clock.now() + 1000);
  });

  it('reports the holder as it is in the file, in the same transaction', async () => {
    const path = freshFile();
    const store = await open(path);
    const other = await open(path);
    const theirs = (await other.tryAcquire('held', 'them', 60_000))!;
    const renewed = (await other.renew(theirs, 90_000))!;
    const [outcome] = await store.acquireMany(['held'], 'me', 5000);
    expect(outcome).toEqual({
      resource: 'held',
      lease: null,
      holder: {
        resource: 'held',
        owner: 'them',
        token: theirs.token,
        expiresAt: renewed.expiresAt,
      },
    });
  });

  it('is one transaction per chunk: a failure part-way through a chunk grants nothing in it', async () => {
    const path = freshFile();
    const table = 'atomic_leases';
    const store = await open(path, { table });
    // A real SQLite failure on the third row, raised by the database itself.
    connect(path).exec(
      `CREATE TRIGGER boom BEFORE INSERT ON "${table}" WHEN new.resource = 'c/boom'
       BEGIN SELECT RAISE(ABORT, 'no such resource allowed'); END`,
    );
    const error = await rejection(store.acquireMany(['c/1', 'c/2', 'c/boom', 'c/3'], 'me', 5000));
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.message).toMatch(/SQLite acquireMany failed: no such resource allowed/);
    expect(await store.list({ prefix: 'c/' })).toEqual([]);
    expect((await store.tryAcquire('c/1', 'me', 5000))?.token).toBe(1);
  });

  it('fails as retryable "database busy" when another connection keeps the write lock', async () => {
    const path = freshFile();
    const store = await open(path, { busyTimeoutMs: 20 });
    const other = connect(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const error = await rejection(store.acquireMany(['x', 'y'], 'me', 5000));
      expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: true });
      expect(error.message).toMatch(/SQLite acquireMany failed \(database busy\)/);
    } finally {
      other.exec('COMMIT');
    }
    expect(await store.get('x')).toBeNull();
  });
});

describe("SqliteStore under another connection's write lock", () => {
  // A connection in this process: its COMMIT runs on a timer, so it can only come while the
  // store leaves the event loop free. A store that held the loop while it waited would never see
  // the lock go, and would fail busy after busyTimeoutMs. `order` says what happened first.
  // (How long each step holds the loop is measured by `npm run bench`, section stalls.)
  function lockFor(path: string, ms: number, order: string[] = []): { unlocked: Promise<void> } {
    const other = connect(path);
    other.exec('BEGIN IMMEDIATE');
    return {
      unlocked: new Promise((resolve) =>
        setTimeout(() => {
          other.exec('COMMIT');
          order.push('unlocked');
          resolve();
        }, ms),
      ),
    };
  }

  it('waits asynchronously and lands once the lock is let go: one acquire, one token', async () => {
    const path = freshFile();
    const store = await open(path);
    const order: string[] = [];
    const { unlocked } = lockFor(path, 100, order);
    const lease = await store.tryAcquire('job', 'me', 60_000).finally(() => order.push('landed'));
    await unlocked;
    expect(order).toEqual(['unlocked', 'landed']);
    expect(lease?.token).toBe(1);
    expect((await store.get('job'))?.token).toBe(1);
  });

  it('gives up after busyTimeoutMs, saying how long the database was locked', async () => {
    const path = freshFile();
    const store = await open(path, { busyTimeoutMs: 300 });
    const lease = (await store.tryAcquire('job', 'me', 60_000))!;
    const order: string[] = [];
    const { unlocked } = lockFor(path, 1000, order);
    const started = performance.now();
    const { result: error, turns } = await loopTurns(() =>
      rejection(store.renew(lease)).finally(() => order.push('gave up')),
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(295);
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: true });
    expect(error.message).toMatch(
      /^SQLite renew failed \(database busy\): the database was locked by another connection for \d+ ms \(busyTimeoutMs is 300\)/,
    );
    // Timers ran again and again while it waited: a wait that held the loop lets them run once.
    expect(turns).toBeGreaterThanOrEqual(3);
    await unlocked;
    expect(order).toEqual(['gave up', 'unlocked']);
    expect(await store.renew(lease)).not.toBeNull();
  });

  it('keeps calls in the order they were made while they wait', async () => {
    const path = freshFile();
    const store = await open(path);
    const order: string[] = [];
    const { unlocked } = lockFor(path, 100, order);
    const owners = Array.from({ length: 20 }, (_, i) => `owner-${i}`);
    const leases = await Promise.all(
      owners.map((owner) => store.tryAcquire('job', owner, 60_000)),
    ).finally(() => order.push('landed'));
    await unlocked;
    expect(order).toEqual(['unlocked', 'landed']);
    // The first call made is the first to run once the lock is free; the rest find it held.
    expect(leases.map((l) => l?.owner ?? null)).toEqual([
      'owner-0',
      ...owners.slice(1).map(() => null),
    ]);
  });

  it('fails calls queued behind a locked one by their own deadline', async () => {
    const path = freshFile();
    const store = await open(path, { busyTimeoutMs: 300 });
    const order: string[] = [];
    // Let go after five deadlines: calls that waited out 300 ms each, one after the other, would
    // find the file free from the sixth on, and succeed. (The runner's own test counts attempts.)
    const { unlocked } = lockFor(path, 1500, order);
    const errors = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        rejection(store.tryAcquire(`job/${i}`, 'me', 60_000)).finally(() =>
          order.push(`failed ${i}`),
        ),
      ),
    );
    expect(errors.every((e) => e.code === 'STORE_UNAVAILABLE' && e.retryable)).toBe(true);
    await unlocked;
    expect(order).toEqual([...Array.from({ length: 10 }, (_, i) => `failed ${i}`), 'unlocked']);
  });
});

describe('SqliteStore.list with after', () => {
  async function filled(): Promise<LeaseStore> {
    const store = await open(freshFile());
    // Code-point order: 'u/a' < 'u/\uFFFF' < 'u/😀' (UTF-16 order would put the emoji first).
    await store.acquireMany(['u/😀', 'u/\uFFFF', 'u/a', 'p/1', 'p/2', 'v'], 'me', 60_000);
    return store;
  }

  it('pages in code-point (UTF-8 byte) order', async () => {
    const store = await filled();
    const seen: string[] = [];
    let after = '';
    for (let i = 0; i < 5; i++) {
      const page = await store.list({ prefix: 'u/', limit: 1, after });
      if (page.length === 0) break;
      seen.push(page[0]!.resource);
      after = page[0]!.resource;
    }
    expect(seen).toEqual(['u/a', 'u/\uFFFF', 'u/😀']);
    expect((await store.list({ after: 'u/\uFFFF' })).map((r) => r.resource)).toEqual(['u/😀', 'v']);
  });

  it('an after before the prefix starts at the prefix; one past it finds nothing', async () => {
    const store = await filled();
    expect((await store.list({ prefix: 'u/', after: 'a' })).map((r) => r.resource)).toEqual([
      'u/a',
      'u/\uFFFF',
      'u/😀',
    ]);
    expect(await store.list({ prefix: 'p/', after: 'q' })).toEqual([]);
    expect((await store.list({ prefix: 'p/', after: 'p/' })).map((r) => r.resource)).toEqual([
      'p/1',
      'p/2',
    ]);
  });

  it('every list form seeks the primary key instead of scanning', () => {
    const db = connect(freshFile());
    const text = statements('t');
    db.exec(
      `CREATE TABLE t (resource TEXT PRIMARY KEY, owner TEXT NOT NULL, token INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID; CREATE TABLE t_data (resource TEXT PRIMARY KEY, data BLOB)`,
    );
    const plans = {
      listRange: { from: 'a', to: 'b', limit: 1 },
      listFrom: { from: 'a', limit: 1 },
      listAfterRange: { after: 'a', to: 'b', limit: 1 },
      listAfter: { after: 'a', limit: 1 },
    } as const;
    for (const [name, params] of Object.entries(plans)) {
      const rows = db
        .prepare(`EXPLAIN QUERY PLAN ${text[name as keyof typeof plans]}`)
        .all(params) as { detail: string }[];
      const detail = rows.map((r) => r.detail).join('; ');
      expect(detail, name).toMatch(/^SEARCH t USING PRIMARY KEY \(resource>/);
      expect(detail, name).not.toMatch(/SCAN|TEMP B-TREE/);
    }
  });
});

describe('SqliteStore options', () => {
  it('refuses a bad watchPollMs, naming it', async () => {
    for (const watchPollMs of [0, -5, 1.5, 60_001, '25']) {
      const error = await rejection(
        SqliteStore.open(':memory:', { watchPollMs: watchPollMs as number }),
      );
      expect(error.code).toBe('INVALID_ARGUMENT');
      expect(error.message).toMatch(/^watchPollMs must be/);
    }
  });

  it('takes watchPollMs from the URL', async () => {
    const path = freshFile();
    const store = await openStore(`sqlite:${path}?watchPollMs=500`);
    opened.push(store);
    expect(store.capabilities.watch).toBe(true);
    // The parameter reaches the option checks; what they refuse, like a non-number, is a URL problem.
    const zero = await rejection(openStore(`sqlite:${path}?watchPollMs=0`));
    expect(zero.code).toBe('STORE_URL_INVALID');
    expect(zero.message).toMatch(/^watchPollMs must be from 1 to 60000, got 0 in sqlite:/);
    const word = await rejection(openStore(`sqlite:${path}?watchPollMs=soon`));
    expect(word.code).toBe('STORE_URL_INVALID');
    expect(word.message).toMatch(/watchPollMs="soon"/);
  });
});
