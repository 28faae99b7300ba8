import { LIMITS } from '../../core/options.js';

/** Schema version this release writes and understands. Bump it with a new entry in `migrations`. */
export const SCHEMA_VERSION = 4;

/** The release log keeps about this many of its newest entries (a watcher further behind misses some). */
export const EVENTS_KEPT = 10_000;
/** The log is pruned when a release lands on a multiple of this sequence number: one range delete. */
export const EVENTS_PRUNE_EVERY = 1024;
/** How often, in ms, a watching store marks its row in the watchers table as still in use. */
export const WATCHER_REFRESH_MS = 30_000;
/**
 * A watchers row not marked for this long (on the marking stores' clocks) is taken for the row of
 * a process that died without removing it, and deleted by the next watcher that refreshes its own.
 */
export const WATCHER_STALE_MS = 300_000;

export function migrations(table: string): string[] {
  const events = `"${table}_events"`;
  const watchers = `"${table}_watchers"`;
  // What the release trigger does: log the release, and now and then drop the oldest entries by
  // seq range (inside a trigger, last_insert_rowid() is the seq just written).
  const logRelease = `BEGIN
       INSERT INTO ${events} (resource) VALUES (new.resource);
       DELETE FROM ${events} WHERE seq <= CASE
         WHEN last_insert_rowid() % ${EVENTS_PRUNE_EVERY} = 0 THEN last_insert_rowid() - ${EVENTS_KEPT}
         ELSE 0 END;
     END`;
  return [
    // 0 → 1
    `CREATE TABLE IF NOT EXISTS "${table}" (
       resource   TEXT    PRIMARY KEY,
       owner      TEXT    NOT NULL,
       token      INTEGER NOT NULL,
       expires_at INTEGER NOT NULL
     ) WITHOUT ROWID`,
    // 1 → 2: the release log `watch` reads. The trigger writes it inside the releasing statement
    // (so in its transaction, by every connection).
    `CREATE TABLE IF NOT EXISTS ${events} (seq INTEGER PRIMARY KEY, resource TEXT NOT NULL);
     CREATE TRIGGER IF NOT EXISTS "${table}_released" AFTER UPDATE OF owner ON "${table}"
     WHEN old.owner <> '' AND new.owner = ''
     ${logRelease}`,
    // 2 → 3: releases are logged only while some store watches the file. Each watching store keeps
    // a row in the watchers table; a release with none there writes nothing but its record.
    `CREATE TABLE IF NOT EXISTS ${watchers} (id TEXT PRIMARY KEY, seen_at INTEGER NOT NULL) WITHOUT ROWID;
     DROP TRIGGER IF EXISTS "${table}_released";
     CREATE TRIGGER "${table}_released" AFTER UPDATE OF owner ON "${table}"
     WHEN old.owner <> '' AND new.owner = '' AND EXISTS (SELECT 1 FROM ${watchers})
     ${logRelease}`,
    // 3 → 4: lease data, in a table of its own: SQLite rewrites a whole row (its overflow pages
    // included) on every UPDATE, so 4 KiB of data in the lease row made each renewal write it
    // again (renewMany of 10,000 took 4–5 times as long). `data` is declared BLOB (no type
    // affinity): a string stays TEXT, bytes stay a BLOB. No row, or NULL, is no data, which is
    // what every record written before reads as. A rowid table: rows of kilobytes.
    `CREATE TABLE IF NOT EXISTS "${table}_data" (resource TEXT PRIMARY KEY, data BLOB)`,
  ];
}

export function metaTable(table: string): string {
  return `CREATE TABLE IF NOT EXISTS "${table}_meta" (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID`;
}

export function versionStatements(table: string) {
  return {
    readVersion: `SELECT value FROM "${table}_meta" WHERE key = 'schema_version'`,
    writeVersion: `INSERT INTO "${table}_meta" (key, value) VALUES ('schema_version', ?)
                   ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
  };
}

/** The largest token a record may hold: `Number.MAX_SAFE_INTEGER`. */
const TOKEN_MAX = 9007199254740991;

/**
 * Whether the lease row as stored is one leasehold writes: an integer token from 1 to
 * `TOKEN_MAX`, a text owner of at most `LIMITS.ownerMaxBytes` bytes, an integer `expires_at`
 * from 0 to `TOKEN_MAX`. SQLite keeps any type in any column (`NOT NULL` is the only constraint),
 * so a row written by hand may hold text, a real or a blob: `'abc' + 1` is 1, and `'abc' + ? < ?`
 * is "expired". The transitions test this before anything else.
 */
export const VALID_ROW = `(typeof(token) = 'integer' AND token BETWEEN 1 AND ${TOKEN_MAX}
     AND typeof(owner) = 'text' AND length(CAST(owner AS BLOB)) <= ${LIMITS.ownerMaxBytes}
     AND typeof(expires_at) = 'integer' AND expires_at BETWEEN 0 AND ${TOKEN_MAX})`;

/** The lease data of the row `row` of the lease table, read by key in the same statement. */
function dataOf(table: string, row: string): string {
  return `(SELECT d.data FROM "${table}_data" AS d WHERE d.resource = ${row}.resource) AS data`;
}

export function statements(table: string) {
  const t = `"${table}"`;
  const d = `"${table}_data"`;
  const COLUMNS = `resource, owner, token, expires_at AS expiresAt, ${dataOf(table, t)}`;
  return {
    // The three transitions take positional parameters, in the order each comment gives:
    // better-sqlite3 binds them about 5 µs faster per acquire-release cycle than named ones.
    // One statement: insert the first record, or take over a released or expired one. A row that
    // is not `VALID_ROW` (or whose token is already the largest) is never taken: the update is
    // made to write a NULL token, so the statement fails with SQLITE_CONSTRAINT_NOTNULL, which
    // nothing else here can cause, and writes nothing (see `SqliteTransitions.grant`).
    // (resource, owner, now, ttl, skew, now)
    acquire: `INSERT INTO ${t} (resource, owner, token, expires_at) VALUES (?, ?, 1, ? + ?)
              ON CONFLICT (resource) DO UPDATE SET owner = excluded.owner,
                token = CASE WHEN ${VALID_ROW} AND token < ${TOKEN_MAX} THEN token + 1 END,
                expires_at = excluded.expires_at
              WHERE owner = '' OR expires_at + ? < ? OR NOT ${VALID_ROW}
              RETURNING token, expires_at AS expiresAt, ${dataOf(table, t)}`,
    // (resource, skew, now): a live record, the one case in which `acquire` would refuse, or one
    // that is not `VALID_ROW` (`valid` 0), on which `acquire` would fail.
    held: `SELECT 1 AS held, ${VALID_ROW} AS valid FROM ${t}
           WHERE resource = ? AND (NOT (owner = '' OR expires_at + ? < ?) OR NOT ${VALID_ROW})`,
    // Renew and release change only a `VALID_ROW`: a record that became corrupt is not the
    // caller's any more, and stays as it is. (writeData writes only the data table.)
    // (now, ttl, resource, owner, token)
    renew: `UPDATE ${t} SET expires_at = ? + ?
            WHERE resource = ? AND owner = ? AND token = ? AND ${VALID_ROW}
            RETURNING expires_at AS expiresAt`,
    // (resource, owner, token)
    release: `UPDATE ${t} SET owner = '', expires_at = 0
              WHERE resource = ? AND owner = ? AND token = ? AND ${VALID_ROW}`,
    // Lease data lives in its own table, which `renew` and `release` above never name: they
    // neither carry nor rewrite it. `writeData` is one statement: the same compare-and-set on
    // owner and token, read under the statement's write lock, writes the data only when it holds.
    // (data, resource, owner, token)
    writeData: `INSERT INTO ${d} (resource, data)
                SELECT resource, ? FROM ${t} WHERE resource = ? AND owner = ? AND token = ?
                ON CONFLICT (resource) DO UPDATE SET data = excluded.data`,
    // (resource, data): run by a renew or release carrying data, in its transaction, once its
    // own compare-and-set has changed the record.
    setData: `INSERT INTO ${d} (resource, data) VALUES (?, ?)
              ON CONFLICT (resource) DO UPDATE SET data = excluded.data`,
    get: `SELECT ${COLUMNS} FROM ${t} WHERE resource = ?`,
    // Each list form has exactly one lower bound, so SQLite seeks the primary key to it.
    listRange: `SELECT ${COLUMNS} FROM ${t}
                WHERE resource >= @from AND resource < @to ORDER BY resource LIMIT @limit`,
    listFrom: `SELECT ${COLUMNS} FROM ${t} WHERE resource >= @from ORDER BY resource LIMIT @limit`,
    listAfterRange: `SELECT ${COLUMNS} FROM ${t}
                     WHERE resource > @after AND resource < @to ORDER BY resource LIMIT @limit`,
    listAfter: `SELECT ${COLUMNS} FROM ${t} WHERE resource > @after ORDER BY resource LIMIT @limit`,
  };
}

export function eventStatements(table: string) {
  const events = `"${table}_events"`;
  const watchers = `"${table}_watchers"`;
  return {
    // Changes whenever another connection commits to the file; a read of a shared counter.
    dataVersion: `PRAGMA data_version`,
    // A bare max() of the key: SQLite reads it off the end of the table (null when empty).
    lastSeq: `SELECT max(seq) AS seq FROM ${events}`,
    eventsAfter: `SELECT seq, resource FROM ${events} WHERE seq > ? ORDER BY seq LIMIT ?`,
    // (id, seenAt)
    register: `INSERT INTO ${watchers} (id, seen_at) VALUES (?, ?)
               ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`,
    // (seenAt, id)
    refresh: `UPDATE ${watchers} SET seen_at = ? WHERE id = ?`,
    // (seenBefore)
    prune: `DELETE FROM ${watchers} WHERE seen_at < ?`,
    // (id)
    unregister: `DELETE FROM ${watchers} WHERE id = ?`,
  };
}
