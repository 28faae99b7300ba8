import { CLOCK_BITS } from './mysql-grant.js';
import { joinByKey, NOW_MS } from './mysql-ops.js';

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

/**
 * The scripts of `acquireAll` and `acquireFirst`: each one transaction sent as one query, one round
 * trip. Both start the same way: every member's row is locked, in byte order (the order every
 * batch of this store locks in, so racing groups, batches and single acquires wait for each other
 * but never deadlock), by an upsert that changes no existing row and inserts a placeholder
 * (token 0, free) for a name never written. With every row locked, the decision (all free, or the
 * first free in the caller's order) is taken on one reading of the server clock, with the single
 * acquire's test: free when `expires_at < now` (released records have 0). Then the grant, and the
 * placeholders left over are deleted before COMMIT, so a refusal commits nothing: no record, no
 * token. Nobody sees a placeholder: readers see committed rows, writers wait for the lock.
 */
export function groupStatements(table: string) {
  const t = `\`${table}\``;
  const join = `${joinByKey(t)} ON t.resource = CAST(b.r AS BINARY)`;
  const start = `START TRANSACTION;
                 SET @leasehold_batch = CONVERT(? USING utf8mb4), @leasehold_now = ${NOW_MS}`;
  const lock = (names: string) => `INSERT INTO ${t} (resource, owner, token, expires_at)
                 SELECT CAST(b.r AS BINARY), '', 0, 0 FROM ${names} ORDER BY b.i
               ON DUPLICATE KEY UPDATE token = token`;
  const unplace = (names: string) => `DELETE t FROM ${names} ${join} WHERE t.token = 0`;
  return {
    /**
     * All or nothing. Answers (result 6) every member's `i`, token and expiry when granted, no row
     * when any member was live. Params: the JSON names as bytes, owner, ttl.
     */
    acquireAll: `${start};
                 ${lock(NAMES)};
                 SELECT COUNT(*) INTO @leasehold_held FROM ${NAMES} ${join}
                   WHERE t.expires_at >= @leasehold_now FOR UPDATE;
                 INSERT INTO ${t} (resource, owner, token, expires_at)
                   SELECT CAST(b.r AS BINARY), '', 0, 0 FROM ${NAMES}
                   WHERE @leasehold_held = 0 ORDER BY b.i
                 ON DUPLICATE KEY UPDATE
                   token = ${NEXT_TOKEN}, owner = ?, expires_at = @leasehold_now + ?;
                 ${unplace(NAMES)};
                 SELECT b.i AS i, t.token, t.expires_at FROM ${NAMES} ${join}
                   WHERE @leasehold_held = 0;
                 COMMIT;
                 SET @leasehold_batch = NULL`,
    /**
     * The first free candidate in the caller's order. Answers (result 6) its position, token and
     * expiry, or no row when every candidate was live. Params: the JSON candidates as bytes, owner,
     * ttl.
     */
    acquireFirst: `${start}, @leasehold_pick = NULL;
                   ${lock(RANKED)};
                   SELECT CAST(b.r AS BINARY) INTO @leasehold_pick FROM ${RANKED} ${join}
                     WHERE t.expires_at < @leasehold_now ORDER BY b.p LIMIT 1 FOR UPDATE;
                   UPDATE ${t} SET token = ${NEXT_TOKEN}, owner = ?, expires_at = @leasehold_now + ?
                     WHERE resource = @leasehold_pick;
                   ${unplace(RANKED)};
                   SELECT b.p AS p, t.token, t.expires_at FROM ${RANKED} ${join}
                     WHERE t.resource = @leasehold_pick;
                   COMMIT;
                   SET @leasehold_batch = NULL, @leasehold_pick = NULL`,
  };
}

export type GroupStatements = ReturnType<typeof groupStatements>;
