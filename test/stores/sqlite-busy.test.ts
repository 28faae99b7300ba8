import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { retryAfterBusy } from '../../src/stores/sqlite/sqlite-busy.js';
import { tempDir } from '../harness/processes.js';

const dir = tempDir('leasehold-sqlite-busy-');
const opened: Database.Database[] = [];
afterAll(() => {
  for (const db of opened.reverse()) db.close();
  dir.cleanup();
});

let files = 0;
function connect(path: string): Database.Database {
  const db = new Database(path, { timeout: 0 });
  opened.push(db);
  return db;
}

const busy = (): Error => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });

// What retrying a busy write relies on: a transaction that failed busy committed nothing.
describe('a busy transaction commits nothing', () => {
  it('in WAL mode, COMMIT is not busy while readers pin the log', () => {
    const path = `${dir.path}/wal-${++files}.db`;
    const writer = connect(path);
    writer.pragma('journal_mode = WAL');
    writer.exec('CREATE TABLE t (x)');
    const reader = connect(path);
    reader.exec('BEGIN');
    reader.prepare('SELECT * FROM t').all();
    const insert = writer.transaction((x: number) =>
      writer.prepare('INSERT INTO t VALUES (?)').run(x),
    );
    for (let i = 0; i < 1500; i++) insert.immediate(i); // past the auto-checkpoint, too
    reader.exec('COMMIT');
    expect(writer.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 1500 });
  });

  it('where COMMIT can be busy (rollback journal), the transaction is rolled back', () => {
    const path = `${dir.path}/journal-${++files}.db`;
    const writer = connect(path);
    writer.exec('CREATE TABLE t (x)');
    const reader = connect(path);
    reader.exec('BEGIN');
    reader.prepare('SELECT * FROM t').all();
    const insert = writer.transaction(() => writer.exec('INSERT INTO t VALUES (1)'));
    expect(() => insert.immediate()).toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }));
    expect(writer.inTransaction).toBe(false);
    reader.exec('COMMIT');
    expect(writer.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 0 });
  });

  it('a busy BEGIN IMMEDIATE runs nothing', () => {
    const path = `${dir.path}/wal-${++files}.db`;
    const writer = connect(path);
    writer.pragma('journal_mode = WAL');
    writer.exec('CREATE TABLE t (x)');
    const other = connect(path);
    other.exec('BEGIN IMMEDIATE');
    let ran = false;
    const insert = writer.transaction(() => {
      ran = true;
      writer.exec('INSERT INTO t VALUES (1)');
    });
    expect(() => insert.immediate()).toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }));
    expect(ran).toBe(false);
    other.exec('COMMIT');
  });
});

describe('retryAfterBusy', () => {
  it('repeats busy attempts until one succeeds', async () => {
    let attempts = 1; // the first, which failed busy before the call
    const result = await retryAfterBusy(
      () => {
        if (++attempts < 4) throw busy();
        return 'done';
      },
      () => performance.now() + 5000,
      () => new Error('gave up'),
      busy(),
    );
    expect([result, attempts]).toEqual(['done', 4]);
  });

  it('throws any other error at once', async () => {
    let attempts = 0;
    const failure = Object.assign(new Error('constraint'), { code: 'SQLITE_CONSTRAINT' });
    await expect(
      retryAfterBusy(
        () => {
          attempts++;
          throw failure;
        },
        () => performance.now() + 5000,
        () => new Error('gave up'),
        busy(),
      ),
    ).rejects.toBe(failure);
    expect(attempts).toBe(1);
  });

  it('gives up past the deadline with the last busy error', async () => {
    const started = performance.now();
    let last: unknown;
    const giveUp = new Error('gave up');
    await expect(
      retryAfterBusy(
        () => {
          throw busy();
        },
        () => started + 100,
        (error) => ((last = error), giveUp),
        busy(),
      ),
    ).rejects.toBe(giveUp);
    expect(performance.now() - started).toBeGreaterThanOrEqual(99);
    expect(last).toMatchObject({ code: 'SQLITE_BUSY' });
  });
});
