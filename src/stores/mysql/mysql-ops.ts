import type { LeaseRef } from '../../core/lease.js';
import type { SqlValue } from './mysql-driver.js';
import { CLOCK_BITS, WINDOW } from './mysql-grant.js';
import { bytes } from './mysql-record.js';

/** Schema version this release writes and understands. Bump it with a new entry in `migrations`. */
export const SCHEMA_VERSION = 2;

/**
 * Milliseconds since the epoch on the server's clock. `UTC_TIMESTAMP(6)` is the statement's start
 * time, like `NOW(6)`, so every use in one statement sees the same instant; unlike
 * `UNIX_TIMESTAMP(NOW(6))` it does not go through the session time zone, whose daylight-saving
 * fold would make an hour of local times ambiguous.
 */
export const NOW_MS = `(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)`;

/**
 * The server clock against the caller's estimate of it (one param, the estimate), as the code an
 * acquire answers with: distance + WINDOW + 1 when the distance is within ±WINDOW ms (1 … 2·WINDOW
 * + 1), else 0. Integer arithmetic only (mysql2 binds numbers as DOUBLE).
 */
const CODE = `GREATEST(0, LEAST(${2 ** CLOCK_BITS}, ${NOW_MS} - CAST(? AS SIGNED) + ${WINDOW + 1})) MOD ${2 ** CLOCK_BITS}`;

/** The largest token (and `expires_at`) a record may hold: `Number.MAX_SAFE_INTEGER`. */
export const SAFE_MAX = 9007199254740991;

/**
 * Whether the lease row (columns prefixed `row`, e.g. `t.`) is one leasehold writes: a token from
 * 1 to 2^53 − 1 and an `expires_at` from 0 to 2^53 − 1. The columns' types (BIGINT NOT NULL,
 * owner VARBINARY(256)) keep out NULL, text, fractions and long owners, but a row written by hand
 * may hold a zero, negative or huge token or a negative expiry (which a batch would also take
 * for its own mark of a grant). The acquires stop on any other row (`STOP`); renew, release and
 * the data writes leave it alone.
 */
export function validRow(row = ''): string {
  return `(${row}token BETWEEN 1 AND ${SAFE_MAX} AND ${row}expires_at BETWEEN 0 AND ${SAFE_MAX})`;
}

/**
 * A BIGINT out of range (ER_DATA_OUT_OF_RANGE, whatever the sql_mode) computed from the row's
 * token, so not folded at prepare: the value an acquire assigns a row that is not `validRow`. The
 * statement fails and writes nothing (a script's transaction is dropped with its connection), as
 * past 2^53 − 1; the store then reads which record it was (`invalid`) and answers `RECORD_INVALID`.
 */
export const STOP = `(token * 0 + 9223372036854775807 + 1)`;

/**
 * Resource and owner are bytes (`VARBINARY`): any UTF-8 string up to the limits round-trips
 * exactly, and `ORDER BY` and range scans follow byte order, which is code-point order. `data` is
 * the lease data in `encodeData`'s form as UTF-8 bytes (`s` + text, or `b` + base64), `NULL` for
 * none: at most 5,465 bytes for `LIMITS.dataMaxBytes`, kept off the row's page by InnoDB when
 * long. Version 1 tables (written before lease data) gain the column in place; their records
 * read as having no data.
 */
export function migrations(table: string): string[] {
  return [
    // 0 → 1
    `CREATE TABLE IF NOT EXISTS \`${table}\` (
       resource   VARBINARY(512) NOT NULL,
       owner      VARBINARY(256) NOT NULL,
       token      BIGINT         NOT NULL,
       expires_at BIGINT         NOT NULL,
       PRIMARY KEY (resource)
     ) ENGINE=InnoDB`,
    // 1 → 2: instant on MariaDB 10.3+ and MySQL 8.0.12+ (a column added last, nullable).
    `ALTER TABLE \`${table}\` ADD COLUMN data BLOB NULL`,
  ];
}

export function metaTable(table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}_meta\` (
            name  VARCHAR(64) NOT NULL PRIMARY KEY,
            value BIGINT      NOT NULL
          ) ENGINE=InnoDB`;
}

/** The rows of a batch: `[hex resource, hex owner, token, ttl]` per lease, in a JSON array. */
const BATCH = `JSON_TABLE(@leasehold_batch, '$[*]' COLUMNS (
                 i   FOR ORDINALITY,
                 r   VARCHAR(1024) PATH '$[0]',
                 o   VARCHAR(512)  PATH '$[1]',
                 k   BIGINT        PATH '$[2]',
                 ttl BIGINT        PATH '$[3]')) AS b`;

/**
 * The names of an acquire batch, `[name, …]`; row `i` (from 1) is the `i`-th, and
 * `CAST(b.r AS BINARY)` its UTF-8 bytes (a binary collation, so nothing is folded or padded).
 */
const NAMES = `JSON_TABLE(@leasehold_batch, '$[*]' COLUMNS (
                 i FOR ORDINALITY,
                 r VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS b`;

/**
 * How a batch joins the lease table (as `t`): the batch drives and each row is found by its key.
 * Left to itself the optimizer scans a small table instead (MariaDB 10.11 did, here), and a
 * locking scan takes every row of it, next-key and out of the batch's order: racing batches,
 * groups and renewals then deadlock.
 */
export function joinByKey(table: string): string {
  return `STRAIGHT_JOIN ${table} AS t FORCE INDEX (PRIMARY)`;
}

export function statements(table: string) {
  const t = `\`${table}\``;
  const match = `t.resource = UNHEX(b.r) AND t.owner = UNHEX(b.o) AND t.token = b.k AND ${validRow('t.')}`;
  // Renew, release and the data writes change only a valid row: one that became corrupt is not
  // the caller's any more, and stays as it is.
  const cas = `resource = ? AND owner = ? AND token = ? AND ${validRow()}`;
  const byKey = joinByKey(t);
  // The batch travels once, as bytes (so no sql_mode or charset can alter it), into a variable.
  const setBatch = `SET @leasehold_batch = CONVERT(? USING utf8mb4)`;
  /**
   * One prepared statement. The CAS decides on `expires_at` alone (a released record has
   * `expires_at = 0`) and assigns `expires_at` last, so every condition sees the old values
   * whatever the server's assignment order; `UTC_TIMESTAMP(6)` is the statement's start, one
   * instant for every use. The OK packet's insert id (`LAST_INSERT_ID(x)`, independent of the
   * CLIENT_FOUND_ROWS flag) carries the whole answer: 0 for "held by someone else", else the
   * new token and where the server clock stood against the caller's estimate (mysql-grant.ts),
   * from which the caller knows the stored expiry exactly without reading it back. A row that is
   * not `validRow` fails the statement (`STOP`), live or not, as a token past 2^53 − 1 does.
   * Params: resource, owner, estimate, ttl, estimate, owner, ttl.
   */
  const acquire = `INSERT INTO ${t} (resource, owner, token, expires_at)
            VALUES (?, ?, LAST_INSERT_ID(${2 ** CLOCK_BITS} + ${CODE}) DIV ${2 ** CLOCK_BITS}, ${NOW_MS} + ?)
            ON DUPLICATE KEY UPDATE
              token      = IF(NOT ${validRow()}, ${STOP}, IF(expires_at < ${NOW_MS},
                              LAST_INSERT_ID((token + 1) * ${2 ** CLOCK_BITS} + ${CODE}) DIV ${2 ** CLOCK_BITS},
                              token + LAST_INSERT_ID(0))),
              owner      = IF(expires_at < ${NOW_MS}, ?, owner),
              expires_at = IF(expires_at < ${NOW_MS}, ${NOW_MS} + ?, expires_at)`;
  return {
    lockName: `SELECT GET_LOCK(CONCAT('leasehold:', LEFT(SHA2(CONCAT(DATABASE(), '.', ?), 256), 40)), ?) AS got`,
    unlock: `DO RELEASE_LOCK(CONCAT('leasehold:', LEFT(SHA2(CONCAT(DATABASE(), '.', ?), 256), 40)))`,
    probeMultiStatements: `DO 0; DO 0`,
    /** Whether the server is MariaDB (whose acquire can answer with the record's data in one prepared statement). */
    flavor: `SELECT VERSION() LIKE '%MariaDB%' AS mariadb`,
    readVersion: `SELECT value FROM \`${table}_meta\` WHERE name = 'schema_version'`,
    writeVersion: `INSERT INTO \`${table}_meta\` (name, value) VALUES ('schema_version', ?)
                   ON DUPLICATE KEY UPDATE value = ?`,
    acquire,
    /**
     * MariaDB: the acquire as one prepared statement still, its answer a row instead of the OK
     * packet (`RETURNING`, which MySQL lacks): the same insert id, and the record's data when
     * granted (a refusal ships nothing of the holder's).
     */
    acquireReturning: `${acquire}
              RETURNING LAST_INSERT_ID() AS answer, IF(LAST_INSERT_ID() = 0, NULL, data) AS data`,
    /**
     * MySQL: the acquire and a read of the granted record's data, in one round trip (two
     * statements, so not prepared). The read finds the row only while it is still this grant's.
     * Params: the acquire's, then resource, owner.
     */
    acquireThenRead: `${acquire};
              SELECT data FROM ${t} WHERE LAST_INSERT_ID() <> 0
                AND resource = ? AND owner = ? AND token = LAST_INSERT_ID() DIV ${2 ** CLOCK_BITS}`,
    /** The stored expiry of a grant whose answer could not carry the clock. Params: resource, owner, token. */
    grantedExpiry: `SELECT expires_at FROM ${t} WHERE resource = ? AND owner = ? AND token = ?`,
    /**
     * One round trip, one transaction: the single acquire's compare-and-set on every name, in
     * byte order (so racing batches lock rows in one order), on one reading of the server clock.
     * A grant writes `expires_at` negated: only this transaction can see that (others wait for
     * its row locks or read committed versions; only a READ UNCOMMITTED session would see it),
     * so the read that follows tells the grants from the refusals exactly, and shows the record
     * behind each refusal; then the grants are made positive before COMMIT. Every name has a row
     * locked by the first insert by then, so the read waits for nobody and the second insert
     * only ever updates (an insert over a join-less source costs a fraction of a multi-table
     * UPDATE here). Each grant's answer carries the record's data (refusals do not ship the
     * holder's). A row that is not `validRow` fails the batch (`STOP`), as a token past
     * 2^53 − 1 does (computed through `× 2^CLOCK_BITS` for that). Params: the JSON names as
     * bytes, owner, ttl, owner, ttl.
     */
    acquireBatch: `START TRANSACTION;
                   ${setBatch}, @leasehold_now = ${NOW_MS};
                   INSERT INTO ${t} (resource, owner, token, expires_at)
                     SELECT CAST(b.r AS BINARY), ?, 1, -(@leasehold_now + ?) FROM ${NAMES} ORDER BY b.i
                   ON DUPLICATE KEY UPDATE
                     token      = IF(NOT ${validRow()}, ${STOP}, IF(expires_at < @leasehold_now,
                                    ((token + 1) * ${2 ** CLOCK_BITS}) DIV ${2 ** CLOCK_BITS}, token)),
                     owner      = IF(expires_at < @leasehold_now, ?, owner),
                     expires_at = IF(expires_at < @leasehold_now, -(@leasehold_now + ?), expires_at);
                   SELECT b.i AS i, t.owner, t.token, t.expires_at,
                          IF(t.expires_at < 0, t.data, NULL) AS data
                     FROM ${NAMES} ${byKey} ON t.resource = CAST(b.r AS BINARY) FOR UPDATE;
                   INSERT INTO ${t} (resource, owner, token, expires_at)
                     SELECT CAST(b.r AS BINARY), '', 0, 0 FROM ${NAMES} ORDER BY b.i
                   ON DUPLICATE KEY UPDATE expires_at = IF(expires_at < 0, -expires_at, expires_at);
                   COMMIT;
                   SET @leasehold_batch = NULL`,
    /** One statement; the OK packet's insert id is the new `expires_at`, or 0 when nothing matched. Params: ttl, resource, owner, token. */
    renew: `UPDATE ${t} SET expires_at = LAST_INSERT_ID(${NOW_MS} + ?)
            WHERE ${cas}`,
    /** Params: resource, owner, token. A match always changes `owner`, so affected rows is 1. */
    release: `UPDATE ${t} SET owner = '', expires_at = 0
              WHERE ${cas}`,
    /**
     * `renew`, `release` and `writeData` carrying data: the same compare-and-set, plus `data`.
     * The insert id answers as `renew`'s does (`writeData`: the token, which a match never leaves
     * 0), so a write of the value already stored still counts without CLIENT_FOUND_ROWS. The
     * statements without data never name the column: renewals do not ship or rewrite it.
     * Params: data, then as `renew` / `release`; `writeData`: data, resource, owner, token.
     */
    renewWithData: `UPDATE ${t} SET data = ?, expires_at = LAST_INSERT_ID(${NOW_MS} + ?)
                    WHERE ${cas}`,
    releaseWithData: `UPDATE ${t} SET owner = '', expires_at = 0, data = ?
                      WHERE ${cas}`,
    writeData: `UPDATE ${t} SET data = ?, token = LAST_INSERT_ID(token)
                WHERE ${cas}`,
    /**
     * One round trip, one transaction: lock the rows whose owner and token match and report them,
     * then update exactly those (they stay locked until COMMIT). Param: the JSON batch as bytes.
     */
    renewBatch: `START TRANSACTION;
                 ${setBatch}, @leasehold_now = ${NOW_MS};
                 SELECT b.i AS i, @leasehold_now + b.ttl AS expiresAt
                   FROM ${BATCH} ${byKey} ON ${match} FOR UPDATE;
                 UPDATE ${BATCH} ${byKey} ON ${match}
                   SET t.expires_at = @leasehold_now + b.ttl;
                 COMMIT;
                 SET @leasehold_batch = NULL`,
    releaseBatch: `START TRANSACTION;
                   ${setBatch};
                   SELECT b.i AS i FROM ${BATCH} ${byKey} ON ${match} FOR UPDATE;
                   UPDATE ${BATCH} ${byKey} ON ${match}
                     SET t.owner = '', t.expires_at = 0;
                   COMMIT;
                   SET @leasehold_batch = NULL`,
    /**
     * After an acquire failed out of range: the first of its names (a JSON array of names, as
     * bytes) whose record is not `validRow`, or whose token is 2^53 − 1 already.
     */
    invalid: `${setBatch};
              SELECT t.resource, t.owner, t.token, t.expires_at FROM ${NAMES} ${byKey}
                ON t.resource = CAST(b.r AS BINARY)
              WHERE NOT (${validRow('t.')} AND t.token < ${SAFE_MAX}) ORDER BY b.i LIMIT 1;
              SET @leasehold_batch = NULL`,
    get: `SELECT resource, owner, token, expires_at, data FROM ${t} WHERE resource = ?`,
    /** Params: from, to (listRange only), after ('' from the start), limit. */
    listRange: `SELECT resource, owner, token, expires_at, data FROM ${t}
                WHERE resource >= ? AND resource < ? AND resource > ? ORDER BY resource LIMIT ?`,
    listFrom: `SELECT resource, owner, token, expires_at, data FROM ${t}
               WHERE resource >= ? AND resource > ? ORDER BY resource LIMIT ?`,
  };
}

export type Statements = ReturnType<typeof statements>;

/** A lease's compare-and-set params: resource, owner, token. */
export function ref(lease: LeaseRef): SqlValue[] {
  return [bytes(lease.resource), bytes(lease.owner), lease.token];
}

/*
 * The group transitions, `acquireAll` and `acquireFirst`: each one transaction sent as one script.
 * A group's names are `NAMES` in byte order.
 */

/** Candidates of `acquireFirst`, `[[name, position], …]` in byte order; `p` is the caller's order. */
const RANKED = `JSON_TABLE(@leasehold_batch, '$[*]' COLUMNS (
                  i FOR ORDINALITY,
                  r VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[0]',
                  p INT PATH '$[1]')) AS b`;

/**
 * The next token of a free record: one above the stored one (a placeholder's 0 becomes 1, as a new
 * record's first token). Computed through `× 2^CLOCK_BITS` like the single acquire's answer, so
 * past 2^53 − 1 the statement fails (BIGINT out of range) and the transaction is dropped unwritten.
 */
const NEXT_TOKEN = `((token + 1) * ${2 ** CLOCK_BITS}) DIV ${2 ** CLOCK_BITS}`;

/** A script sent as one query, and which of its results holds the answer rows. */
export interface GrantScript {
  readonly sql: string;
  readonly answerAt: number;
}

function script(before: string[], answer: string, after: string[]): GrantScript {
  return { sql: [...before, answer, ...after].join(';\n'), answerAt: before.length };
}

/**
 * The scripts of `acquireAll` and `acquireFirst`, each sent as one query: one round trip. The core
 * of both is one transaction. Every member's row is locked first, in byte order (the order every
 * batch of this store locks in, so racing groups, batches and single acquires wait for each other
 * but never deadlock), by an upsert that changes no existing row and inserts a placeholder
 * (token 0, free) for a name never written. With every row locked, the decision (all free, or the
 * first free in the caller's order) is taken on the one reading of the server clock the script
 * starts with, by the single acquire's test: free when `expires_at < now` (released records have
 * 0). Then the grant, and the placeholders left over are deleted before COMMIT, so a refusal
 * commits nothing: no record, no token. Nobody sees a placeholder: readers see committed rows,
 * writers wait for the lock. Every join finds rows by key (`joinByKey`), so no statement locks a
 * row outside the call's names. Params of both: the JSON names as bytes, owner, ttl.
 */
export function groupStatements(table: string) {
  const t = `\`${table}\``;
  const join = `${joinByKey(t)} ON t.resource = CAST(b.r AS BINARY)`;
  const start = `SET @leasehold_batch = CONVERT(? USING utf8mb4), @leasehold_owner = ?,
                     @leasehold_ttl = ?, @leasehold_now = ${NOW_MS}`;
  const end = `SET @leasehold_batch = NULL, @leasehold_owner = NULL`;
  /**
   * Locks every name's row, unless `skip` (a condition on variables) holds; a row that is not
   * `validRow` fails the script there (`STOP`), before anything is decided or written. So a
   * placeholder's token 0 is never a hand-written record's.
   */
  const lock = (
    names: string,
    skip: string,
  ) => `INSERT INTO ${t} (resource, owner, token, expires_at)
      SELECT CAST(b.r AS BINARY), '', 0, 0 FROM ${names} WHERE NOT (${skip}) ORDER BY b.i
    ON DUPLICATE KEY UPDATE token = IF(${validRow()}, token, ${STOP})`;
  const unplace = (names: string, when: string) =>
    `DELETE t FROM ${names} ${join} WHERE ${when} AND t.token = 0`;
  return {
    /** All or nothing: every member's `i`, token, expiry and data when granted, no row when any was live. */
    acquireAll: script(
      [
        start,
        'START TRANSACTION',
        lock(NAMES, 'FALSE'),
        `SELECT COUNT(*) INTO @leasehold_held FROM ${NAMES} ${join}
           WHERE t.expires_at >= @leasehold_now FOR UPDATE`,
        `INSERT INTO ${t} (resource, owner, token, expires_at)
           SELECT CAST(b.r AS BINARY), '', 0, 0 FROM ${NAMES} WHERE @leasehold_held = 0 ORDER BY b.i
         ON DUPLICATE KEY UPDATE token = ${NEXT_TOKEN}, owner = @leasehold_owner,
           expires_at = @leasehold_now + @leasehold_ttl`,
        unplace(NAMES, '@leasehold_held > 0'),
      ],
      `SELECT b.i AS i, t.token, t.expires_at, t.data FROM ${NAMES} ${join} WHERE @leasehold_held = 0`,
      ['COMMIT', end],
    ),
    /**
     * The first free candidate in the caller's order: its position, token, expiry and data, or no row
     * when every candidate was live. The first candidate is tried on its own before the
     * transaction, with the single acquire's compare-and-set (in the common case it is free, and
     * the transaction then does nothing): locking it alone first and the rest later, inside one
     * transaction, would lock out of byte order. Extra params: the first candidate's name, twice
     * (the grant, and the answer's read of its data: committed before the transaction began,
     * and only this grant's token may change it).
     */
    acquireFirst: script(
      [
        `${start}, @leasehold_pick = NULL`,
        `INSERT INTO ${t} (resource, owner, token, expires_at)
           VALUES (?, @leasehold_owner, LAST_INSERT_ID(1), @leasehold_now + @leasehold_ttl)
         ON DUPLICATE KEY UPDATE
           token      = IF(NOT ${validRow()}, ${STOP},
                           IF(expires_at < @leasehold_now, LAST_INSERT_ID(${NEXT_TOKEN}),
                              token + LAST_INSERT_ID(0))),
           owner      = IF(expires_at < @leasehold_now, @leasehold_owner, owner),
           expires_at = IF(expires_at < @leasehold_now, @leasehold_now + @leasehold_ttl, expires_at)`,
        // The first's new token, or 0 when it was live.
        'SET @leasehold_first = LAST_INSERT_ID()',
        'START TRANSACTION',
        lock(RANKED, '@leasehold_first > 0'),
        `SELECT CAST(b.r AS BINARY) INTO @leasehold_pick FROM ${RANKED} ${join}
           WHERE @leasehold_first = 0 AND t.expires_at < @leasehold_now
           ORDER BY b.p LIMIT 1 FOR UPDATE`,
        `UPDATE ${t} SET token = ${NEXT_TOKEN}, owner = @leasehold_owner,
           expires_at = @leasehold_now + @leasehold_ttl
         WHERE resource = @leasehold_pick`,
        unplace(RANKED, '@leasehold_first = 0'),
      ],
      `SELECT b.p AS p, t.token, t.expires_at, t.data FROM ${RANKED} ${join}
         WHERE t.resource = @leasehold_pick
       UNION ALL
       SELECT 0, @leasehold_first, @leasehold_now + @leasehold_ttl, data FROM ${t}
         WHERE @leasehold_first > 0 AND resource = ?`,
      ['COMMIT', `${end}, @leasehold_pick = NULL`],
    ),
  };
}

export type GroupStatements = ReturnType<typeof groupStatements>;
