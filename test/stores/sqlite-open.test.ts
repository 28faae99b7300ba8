import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore, type WatchEvent } from '../../src/index.js';
import { SCHEMA_VERSION } from '../../src/stores/sqlite/sqlite-ops.js';
import { rejection } from '../harness/expect-error.js';
import { loopTurns } from '../harness/loop-turns.js';
import { tempDir, waitFor } from '../harness/processes.js';

const dir = tempDir('leasehold-sqlite-open-');
const opened: { close(): unknown }[] = [];
afterAll(async () => {
  for (const handle of opened.reverse()) await handle.close();
  dir.cleanup();
});

let files = 0;
function freshFile(): string {
  return `${dir.path}/open-${++files}.db`;
}

function connect(path: string): Database.Database {
  const db = new Database(path);
  opened.push(db);
  return db;
}

describe('SqliteStore schema', () => {
  it('upgrades a file written by schema version 1, keeping its records and tokens', async () => {
    const path = freshFile();
    const v1 = connect(path);
    v1.pragma('journal_mode = WAL');
    v1.exec(`
      CREATE TABLE leasehold_leases (resource TEXT PRIMARY KEY, owner TEXT NOT NULL,
        token INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE leasehold_leases_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO leasehold_leases_meta VALUES ('schema_version', 1);
      INSERT INTO leasehold_leases VALUES ('old/held', 'them', 7, ${Date.now() + 60_000});
      INSERT INTO leasehold_leases VALUES ('old/free', '', 4, 0);`);

    const store = await SqliteStore.open(path);
    opened.push(store);
    const version = v1
      .prepare(`SELECT value FROM leasehold_leases_meta WHERE key = 'schema_version'`)
      .get() as { value: number };
    expect(version.value).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBe(4);
    expect(await store.get('old/held')).toMatchObject({ owner: 'them', token: 7 });
    const lease = (await store.tryAcquire('old/free', 'me', 5000))!;
    expect(lease.token).toBe(5);

    const events: WatchEvent[] = [];
    store.watch('old/', (event) => events.push(event));
    expect(await store.release(lease)).toBe(true);
    await waitFor('the release event', () => events.length > 0, 5000);
    expect(events).toEqual([{ type: 'released', resource: 'old/free' }]);
    expect(v1.prepare('SELECT resource FROM leasehold_leases_events').all()).toEqual([
      { resource: 'old/free' },
    ]);
  });

  it('refuses a file from a newer leasehold, and says so', async () => {
    const path = freshFile();
    const db = connect(path);
    db.exec(`CREATE TABLE leasehold_leases_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
             INSERT INTO leasehold_leases_meta VALUES ('schema_version', ${SCHEMA_VERSION + 1});`);
    const error = await rejection(SqliteStore.open(path));
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: false });
    expect(error.message).toContain(
      `schema version ${SCHEMA_VERSION + 1}, newer than this leasehold understands`,
    );
  });
});

describe('SqliteStore.open under contention', () => {
  it('opens an up-to-date file without taking the write lock', async () => {
    const path = freshFile();
    opened.push(await SqliteStore.open(path));
    const writer = connect(path);
    writer.exec('BEGIN IMMEDIATE');
    try {
      // With the write lock held elsewhere, an open that needed it would fail after 200 ms.
      const store = await SqliteStore.open(path, { busyTimeoutMs: 200 });
      opened.push(store);
      expect(await store.get('anything')).toBeNull();
    } finally {
      writer.exec('COMMIT');
    }
  });

  it('waits for a locked fresh file asynchronously, then opens it', async () => {
    const path = freshFile();
    const other = connect(path);
    other.exec('BEGIN EXCLUSIVE'); // a fresh file is in rollback mode: this locks out everyone
    const order: string[] = [];
    // The lock is let go by a timer of this very process: an open that held the event loop while
    // it waited would never see it go, and would fail busy after busyTimeoutMs.
    const unlock = setTimeout(() => {
      other.exec('COMMIT');
      order.push('unlocked');
    }, 100);
    const store = await SqliteStore.open(path, { busyTimeoutMs: 10_000 }).finally(() =>
      order.push('opened'),
    );
    clearTimeout(unlock);
    opened.push(store);
    expect(order).toEqual(['unlocked', 'opened']); // it did wait for the lock
    expect((await store.tryAcquire('after-wait', 'me', 5000))?.token).toBe(1);
  });

  it('gives up after busyTimeoutMs with a retryable busy error, the loop free throughout', async () => {
    const path = freshFile();
    const other = connect(path);
    other.exec('BEGIN EXCLUSIVE');
    try {
      const started = performance.now();
      const { result: error, turns } = await loopTurns(() =>
        rejection(SqliteStore.open(path, { busyTimeoutMs: 400 })),
      );
      expect(performance.now() - started).toBeGreaterThanOrEqual(390);
      expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: true });
      expect(error.message).toMatch(/^SQLite open failed \(database busy\): database is locked/);
      // Timers ran again and again while it waited (a wait that held the loop lets them run once
      // at most); how long each step held it is measured by `npm run bench` (section stalls).
      expect(turns).toBeGreaterThanOrEqual(3);
    } finally {
      other.exec('COMMIT');
    }
  });
});
