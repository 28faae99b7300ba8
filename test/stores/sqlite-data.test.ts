import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { LIMITS, SqliteStore, type Lease } from '../../src/index.js';
import type { SqliteDatabase } from '../../src/stores/sqlite/index.js';
import {
  LIST_FIRST_ROWS,
  LIST_PAGE_BYTES,
  LIST_ROWS,
} from '../../src/stores/sqlite/sqlite-list.js';
import { SCHEMA_VERSION, statements } from '../../src/stores/sqlite/sqlite-ops.js';
import { ManualClock } from '../../src/testing/index.js';
import { tempDir } from '../harness/processes.js';

const dir = tempDir('leasehold-sqlite-data-');
const opened: { close(): unknown }[] = [];
afterAll(async () => {
  for (const handle of opened.reverse()) await handle.close();
  dir.cleanup();
});

let files = 0;
const freshFile = (): string => `${dir.path}/data-${++files}.db`;

/** A plain connection to the file: another process, in effect. */
function connect(path: string): Database.Database {
  const db = new Database(path);
  opened.push(db);
  return db;
}

/**
 * A store on its own connection whose every executed statement is recorded, as SQLite runs it
 * (better-sqlite3's `verbose` hands over the statement with its values filled in): the SQLite
 * form of counting round trips.
 */
function recorded(path: string, clock = new ManualClock()) {
  const log: string[] = [];
  const db = new Database(path, { verbose: (sql) => log.push(String(sql)) });
  const store = new SqliteStore(db as unknown as SqliteDatabase, { clock, maxClockSkewMs: 50 });
  opened.push(store);
  /** The statements `call` ran. */
  const run = async <T>(call: () => Promise<T>): Promise<{ result: T; sql: string[] }> => {
    const start = log.length;
    const result = await call();
    return { result, sql: log.slice(start) };
  };
  return { store, clock, run };
}

/**
 * Exactly `LIMITS.dataMaxBytes` (4,096) UTF-8 bytes of 1-, 2-, 3- and 4-byte characters, U+0000
 * included: 409 groups of 10 bytes, then two 3-byte characters.
 */
const MULTI_BYTE = '\u0000é€😀'.repeat(409) + '€€';

describe('SqliteStore lease data', () => {
  it('writeData is one statement; renew and release with data one transaction, their own statement the compare-and-set', async () => {
    const { store, run } = recorded(freshFile());
    const lease = (await store.tryAcquire('rt/a', 'a', 5000))!;
    const write = await run(() => store.writeData(lease, 'v1'));
    const renew = await run(() => store.renew(lease, 6000, new Uint8Array([1, 2])));
    const release = await run(() => store.release(lease, 'last'));
    expect([write.result, renew.result?.data, release.result]).toEqual([
      true,
      new Uint8Array([1, 2]),
      true,
    ]);
    // The data is written by the statement that checks owner and token.
    expect(write.sql).toEqual([
      expect.stringMatching(
        /^INSERT INTO "leasehold_leases_data" .* SELECT resource, 'v1' FROM "leasehold_leases" WHERE resource = 'rt\/a' AND owner = 'a' AND token = 1\.0\s+ON CONFLICT/s,
      ),
    ]);
    // One transaction: the plain renew's (or release's) statement, then the data only when it
    // changed the record; one lock and one commit, as the plain transition alone.
    const plain = statements('leasehold_leases');
    const oneLine = (sql: string): string => sql.replace(/\s+/g, ' ');
    expect(renew.sql.map(oneLine)).toEqual([
      'BEGIN IMMEDIATE',
      expect.stringMatching(
        /^UPDATE "leasehold_leases" SET expires_at = \d+(\.0)? \+ 6000(\.0)? WHERE/,
      ),
      expect.stringMatching(/^INSERT INTO "leasehold_leases_data" .* VALUES \('rt\/a', x'0102'\)/),
      'COMMIT',
    ]);
    expect(oneLine(plain.renew)).toMatch(
      /^UPDATE "leasehold_leases" SET expires_at = \? \+ \? WHERE/,
    );
    expect(release.sql.map(oneLine)).toEqual([
      'BEGIN IMMEDIATE',
      expect.stringMatching(/^UPDATE "leasehold_leases" SET owner = '', expires_at = 0 WHERE/),
      expect.stringMatching(/^INSERT INTO "leasehold_leases_data" .* VALUES \('rt\/a', 'last'\)/),
      'COMMIT',
    ]);
    // Refused: the compare-and-set alone, nothing written.
    const late = await run(() => store.writeData(lease, 'late'));
    expect([late.result, late.sql.length]).toEqual([false, 1]);
    const lateRenew = await run(() => store.renew(lease, 6000, 'late'));
    expect(lateRenew.result).toBeNull();
    expect(lateRenew.sql.map(oneLine)).toEqual([
      'BEGIN IMMEDIATE',
      expect.stringMatching(/^UPDATE "leasehold_leases" SET expires_at/),
      'COMMIT',
    ]);
    expect(await store.get('rt/a')).toMatchObject({ owner: '', data: 'last' });
  });

  it('every grant hands the data over in the statement that grants it: after release, after expiry, in batches and groups', async () => {
    const { store, clock, run } = recorded(freshFile());
    const first = (await store.tryAcquire('g/a', 'a', 1000))!;
    await store.release(first, 'left by a');
    const afterRelease = await run(() => store.tryAcquire('g/a', 'b', 1000));
    expect(afterRelease.result).toMatchObject({ owner: 'b', data: 'left by a' });
    expect(afterRelease.sql).toHaveLength(1);
    await store.writeData(afterRelease.result!, new Uint8Array([0, 255]));
    clock.stepWall(1000 + 50 + 1); // past expiresAt + maxClockSkewMs: expired for a contender
    const afterExpiry = await run(() => store.tryAcquire('g/a', 'c', 1000));
    expect(afterExpiry.result).toMatchObject({ owner: 'c', token: first.token + 2 });
    expect(afterExpiry.result!.data).toEqual(new Uint8Array([0, 255]));
    expect(afterExpiry.sql).toHaveLength(1);
    await store.release(afterExpiry.result!, 'for the batch');

    const many = await run(() => store.acquireMany(['g/a', 'g/new'], 'd', 1000));
    expect(many.result.map((o) => o.lease?.data ?? null)).toEqual(['for the batch', null]);
    expect(many.result[1]!.lease).not.toHaveProperty('data');
    // BEGIN, one acquire per name, COMMIT: nothing read besides.
    expect(many.sql).toHaveLength(4);
    // A refusal reports the holder with its data, read in the same transaction as before.
    const refused = await store.acquireMany(['g/a'], 'x', 1000);
    expect(refused[0]!.holder).toMatchObject({ owner: 'd', data: 'for the batch' });
    await store.releaseMany(many.result.map((o) => o.lease!));

    const group = await run(() => store.acquireAll(['g/new', 'g/a'], 'e', 1000));
    expect(group.result!.map((l) => l.data ?? null)).toEqual([null, 'for the batch']);
    // BEGIN, a probe and an acquire per member, COMMIT.
    expect(group.sql).toHaveLength(6);
    await store.releaseMany(group.result!);

    const firstFree = await run(() => store.acquireFirst(['g/a', 'g/new'], 'f', 1000));
    expect(firstFree.result).toMatchObject({ resource: 'g/a', data: 'for the batch' });
    expect(firstFree.sql).toHaveLength(3);
  });

  it('renewals and releases without data neither carry the data nor rewrite it', async () => {
    const path = freshFile();
    const { store, run } = recorded(path);
    const names = Array.from({ length: 50 }, (_, i) => `keep/${i}`);
    const leases = (await store.acquireMany(names, 'a', 5000)).map((o) => o.lease!);
    const plainNames = names.map((n) => n.replace('keep/', 'bare/'));
    const plain = (await store.acquireMany(plainNames, 'a', 5000)).map((o) => o.lease!);
    const big = 'x'.repeat(LIMITS.dataMaxBytes);
    for (const lease of leases) expect(await store.writeData(lease, big)).toBe(true);
    // A witness in the file: triggers that log every write to the data table. (The lease table
    // has no data column, so no renewal rewrites the data with its row.)
    const witness = connect(path);
    witness.exec(`CREATE TABLE touched (resource TEXT);
      CREATE TRIGGER data_updated AFTER UPDATE ON leasehold_leases_data
      BEGIN INSERT INTO touched VALUES (new.resource); END;
      CREATE TRIGGER data_inserted AFTER INSERT ON leasehold_leases_data
      BEGIN INSERT INTO touched VALUES (new.resource); END;
      CREATE TRIGGER data_deleted AFTER DELETE ON leasehold_leases_data
      BEGIN INSERT INTO touched VALUES (old.resource); END;`);
    const columns = witness.prepare(`SELECT name FROM pragma_table_info('leasehold_leases')`).all();
    expect(columns.map((c) => (c as { name: string }).name)).toEqual([
      'resource',
      'owner',
      'token',
      'expires_at',
    ]);
    const touched = (): number =>
      (witness.prepare('SELECT count(*) AS n FROM touched').get() as { n: number }).n;

    const withData = await run(() => store.renewMany(leases, 6000));
    const without = await run(() => store.renewMany(plain, 6000));
    expect(withData.result.every((l) => l !== null)).toBe(true);
    // The same statements, byte for byte, whatever the records hold.
    const bytes = (sql: string[]): number => sql.reduce((n, s) => n + s.length, 0);
    expect(withData.sql.length).toBe(without.sql.length);
    expect(bytes(withData.sql)).toBe(bytes(without.sql));
    for (const sql of withData.sql) expect(sql).not.toMatch(/data|xxxx/);
    await store.renew(leases[0]!);
    await store.release(leases[1]!);
    await store.releaseMany(leases.slice(2));
    expect(touched()).toBe(0);
    const rows = witness
      .prepare(`SELECT count(*) AS n FROM leasehold_leases_data WHERE data = ?`)
      .get(big) as { n: number };
    expect(rows.n).toBe(leases.length);
    // The witness does see a write of the data.
    await store.writeData(plain[0]!, 'x');
    expect(touched()).toBe(1);
  });

  it('keeps strings as TEXT and bytes as a BLOB; LIMITS.dataMaxBytes of each round-trips exactly', async () => {
    const path = freshFile();
    const { store } = recorded(path);
    const text = MULTI_BYTE;
    expect(Buffer.byteLength(text)).toBe(LIMITS.dataMaxBytes);
    expect(text.length).toBeLessThan(LIMITS.dataMaxBytes / 2);
    const bytes = new Uint8Array(LIMITS.dataMaxBytes).map((_, i) => (i * 7) % 256);
    const a = (await store.tryAcquire('limit/text', 'a', 5000))!;
    const b = (await store.tryAcquire('limit/bytes', 'a', 5000))!;
    expect(await store.writeData(a, text)).toBe(true);
    expect(await store.release(b, bytes)).toBe(true);
    expect((await store.get('limit/text'))!.data).toBe(text);
    const read = (await store.list({ prefix: 'limit/b' }))[0]!.data;
    expect(read).toEqual(bytes);
    expect(read).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(read)).toBe(false);
    expect((await store.tryAcquire('limit/bytes', 'b', 5000))!.data).toEqual(bytes);
    const raw = connect(path);
    expect(
      raw
        .prepare('SELECT resource, typeof(data) AS type FROM leasehold_leases_data ORDER BY 1')
        .all(),
    ).toEqual([
      { resource: 'limit/bytes', type: 'blob' },
      { resource: 'limit/text', type: 'text' },
    ]);
    // A value of another type was written by something else: a corrupt record, said so.
    raw.prepare(`UPDATE leasehold_leases_data SET data = 42 WHERE resource = 'limit/text'`).run();
    await expect(store.get('limit/text')).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      retryable: false,
      message: expect.stringContaining('not text or a blob'),
    });
  });

  it('lists records carrying data in smaller pages, so that no read decodes megabytes at once', async () => {
    const { store, run } = recorded(freshFile());
    const heavy = (
      await store.acquireMany(
        Array.from({ length: 200 }, (_, i) => `heavy/${String(i).padStart(3, '0')}`),
        'a',
        5000,
      )
    ).map((o) => o.lease!);
    for (const lease of heavy) await store.writeData(lease, '€'.repeat(1365));
    await store.acquireMany(
      Array.from({ length: 2000 }, (_, i) => `light/${String(i).padStart(4, '0')}`),
      'a',
      5000,
    );
    const pages = (sql: string[]): number[] =>
      sql.map((s) => Number(/LIMIT (\d+)/.exec(s)?.[1])).filter((n) => n > 0);
    const heavyList = await run(() => store.list({ prefix: 'heavy/' }));
    expect(heavyList.result).toHaveLength(200);
    expect(heavyList.result.every((r) => r.data === '€'.repeat(1365))).toBe(true);
    // About 2.8 kB each as counted (1,365 UTF-16 units, twice): 94 fit in LIST_PAGE_BYTES.
    const fit = Math.floor(LIST_PAGE_BYTES / (2 * (1365 + 'heavy/000'.length + 1) + 16));
    expect(fit).toBe(94);
    expect(pages(heavyList.sql)).toEqual([LIST_FIRST_ROWS, fit, fit]);
    // Records without data: after the first page, pages of LIST_ROWS as before.
    const lightList = await run(() => store.list({ prefix: 'light/', limit: 5000 }));
    expect(lightList.result).toHaveLength(2000);
    expect(pages(lightList.sql)).toEqual([LIST_FIRST_ROWS, LIST_ROWS, LIST_ROWS]);
  });

  it('takes batches whose records carry much data in smaller transactions, each outcome exact', async () => {
    const { store, run } = recorded(freshFile());
    const names = Array.from({ length: 1000 }, (_, i) => `big/${String(i).padStart(4, '0')}`);
    const transactions = (sql: string[]): number => sql.filter((s) => /^BEGIN/i.test(s)).length;
    // No data anywhere: chunks of BATCH_ROWS (500).
    const plain = await run(() => store.acquireMany(names, 'a', 60_000));
    expect(transactions(plain.sql)).toBe(2);
    const value = (i: number): string => `${i}:`.padEnd(LIMITS.dataMaxBytes, 'v');
    for (const [i, o] of plain.result.entries()) await store.release(o.lease!, value(i));
    // 4 KiB each (counted twice as text): far fewer records per transaction, every one exact.
    const heavy = await run(() => store.acquireMany(names, 'b', 60_000));
    expect(transactions(heavy.sql)).toBeGreaterThanOrEqual(10);
    expect(heavy.result.map((o) => [o.resource, o.lease?.owner, o.lease?.data])).toEqual(
      names.map((n, i) => [n, 'b', value(i)]),
    );
    const refused = await run(() => store.acquireMany(names, 'c', 60_000));
    expect(transactions(refused.sql)).toBeGreaterThanOrEqual(10);
    expect(refused.result.every((o, i) => !o.lease && o.holder?.data === value(i))).toBe(true);
  });

  it('upgrades a file of the release before lease data: old records read with none and take data', async () => {
    const path = freshFile();
    const old = connect(path);
    old.pragma('journal_mode = WAL');
    // Schema version 3 exactly as that release created it.
    old.exec(`
      CREATE TABLE IF NOT EXISTS "leasehold_leases_meta" (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS "leasehold_leases" (
        resource TEXT PRIMARY KEY, owner TEXT NOT NULL, token INTEGER NOT NULL, expires_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS "leasehold_leases_events" (seq INTEGER PRIMARY KEY, resource TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS "leasehold_leases_watchers" (id TEXT PRIMARY KEY, seen_at INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TRIGGER "leasehold_leases_released" AFTER UPDATE OF owner ON "leasehold_leases"
      WHEN old.owner <> '' AND new.owner = '' AND EXISTS (SELECT 1 FROM "leasehold_leases_watchers")
      BEGIN
        INSERT INTO "leasehold_leases_events" (resource) VALUES (new.resource);
        DELETE FROM "leasehold_leases_events" WHERE seq <= CASE
          WHEN last_insert_rowid() % 1024 = 0 THEN last_insert_rowid() - 10000 ELSE 0 END;
      END;
      INSERT INTO "leasehold_leases_meta" VALUES ('schema_version', 3);`);
    const clock = new ManualClock();
    const now = clock.now();
    old
      .prepare('INSERT INTO leasehold_leases VALUES (?, ?, ?, ?)')
      .run('old/held', 'them', 7, now + 60_000);
    old.prepare('INSERT INTO leasehold_leases VALUES (?, ?, ?, ?)').run('old/free', '', 4, 0);

    const store = await SqliteStore.open(path, { clock });
    opened.push(store);
    const version = old
      .prepare(`SELECT value FROM leasehold_leases_meta WHERE key = 'schema_version'`)
      .get() as { value: number };
    expect([version.value, SCHEMA_VERSION]).toEqual([4, 4]);
    const held = await store.get('old/held');
    expect(held).toEqual({
      resource: 'old/held',
      owner: 'them',
      token: 7,
      expiresAt: now + 60_000,
    });
    expect(await store.list({ prefix: 'old/' })).toEqual([
      { resource: 'old/free', owner: '', token: 4, expiresAt: 0 },
      held,
    ]);
    // The old holder's record takes data under its token, as a grant made by this release would.
    const theirs: Lease = { ...held!, ttlMs: 60_000 };
    expect(await store.writeData(theirs, 'from them')).toBe(true);
    const lease = (await store.tryAcquire('old/free', 'me', 5000))!;
    expect(lease).toEqual({
      resource: 'old/free',
      owner: 'me',
      token: 5,
      expiresAt: now + 5000,
      ttlMs: 5000,
    });
    expect((await store.renew(lease, 5000, 'renewed'))!.data).toBe('renewed');
    expect(await store.release(lease, 'released')).toBe(true);
    expect((await store.tryAcquire('old/free', 'next', 5000))!.data).toBe('released');
    expect((await store.get('old/held'))!.data).toBe('from them');

    // A process still on the old release keeps working on the upgraded table, and its
    // statements (which never name the column) leave the data where it is.
    old
      .prepare(
        `UPDATE leasehold_leases SET owner = '', expires_at = 0 WHERE resource = ? AND owner = ? AND token = ?`,
      )
      .run('old/held', 'them', 7);
    old
      .prepare(
        `INSERT INTO leasehold_leases (resource, owner, token, expires_at) VALUES (?, ?, 1, ? + ?)
         ON CONFLICT (resource) DO UPDATE SET owner = excluded.owner, token = token + 1, expires_at = excluded.expires_at
         WHERE owner = '' OR expires_at + ? < ?
         RETURNING token, expires_at AS expiresAt`,
      )
      .all('old/held', 'old-process', now, 5000, 50, now);
    expect(await store.get('old/held')).toMatchObject({
      owner: 'old-process',
      token: 8,
      data: 'from them',
    });
  });
});
