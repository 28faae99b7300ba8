import { CLOCK_BITS } from './mysql-grant.js';
import { joinByKey, NOW_MS, STOP, validRow } from './mysql-ops.js';

/** Names of a group, `[name, …]` in byte order; row `i` (from 1) is the `i`-th. */
const NAMES = `JSON_TABLE(@leasehold_batch, '$[*]' COLUMNS (
                 i FOR ORDINALITY,
                 r VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS b`;

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
