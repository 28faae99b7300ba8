import { createHash } from 'node:crypto';
import type { LeaseRef } from '../../core/lease.js';
import { LIMITS } from '../../core/options.js';

/** Schema version this release writes and understands. Bump it with a new entry in `migrations`. */
export const SCHEMA_VERSION = 3;

/** The server's clock in ms since the epoch: the time authority for every expiry decision. */
const NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/** The largest token (and `expires_at`) a record may hold: `Number.MAX_SAFE_INTEGER`. */
const SAFE_MAX = 9007199254740991;

/**
 * Whether the lease row `row` is one leasehold writes: a token from 1 to 2^53 − 1, an owner of at
 * most `LIMITS.ownerMaxBytes`, an `expires_at` from 0 to 2^53 − 1. The columns' types (bigint, text,
 * NOT NULL) allow a row written by hand to hold a negative, zero or huge token, a long owner or a
 * negative expiry; the statements test this before taking or changing a row.
 */
export function validRow(row: string): string {
  // One CASE, not three range conditions: the planner estimates each range on a column without
  // statistics (a new table) at 0.5 %, so ANDed into a join they made it expect one row of the
  // table and scan it in a nested loop once per lease — a renewMany of 1,250 on a table of
  // 10,000 took 2.6 s instead of milliseconds. It takes a CASE for a plain condition, at 50 %.
  return `(CASE WHEN ${row}.token BETWEEN 1 AND ${SAFE_MAX}
                 AND octet_length(${row}.owner) <= ${LIMITS.ownerMaxBytes}
                 AND ${row}.expires_at BETWEEN 0 AND ${SAFE_MAX} THEN true ELSE false END)`;
}

/**
 * The next token of the row `row` an acquire takes, or NULL when the row is not `validRow` or its
 * token is already the largest: the NULL fails the token column's NOT NULL constraint (SQLSTATE
 * 23502, raised by nothing else in these statements), so the statement writes nothing and the
 * client answers `RECORD_INVALID` (see `isInvalidRefusal`).
 */
function nextToken(row: string): string {
  return `CASE WHEN ${validRow(row)} AND ${row}.token < ${SAFE_MAX} THEN ${row}.token + 1 END`;
}

/** `"schema"."name"`; both parts are checked identifiers (letters, digits, _), never user text. */
function qualified(schema: string, name: string): string {
  return `"${schema}"."${name}"`;
}

/**
 * The NOTIFY channel of one lease table. Channel names are identifiers (at most 63 bytes):
 * `schema.table` when it fits, else a digest of it.
 */
export function channelName(schema: string, table: string): string {
  const name = `${schema}.${table}`;
  if (name.length <= 63) return name;
  return `leasehold_${createHash('sha256').update(name).digest('hex').slice(0, 40)}`;
}

/** The DDL run, under an advisory lock, to bring a table from version `i` to `i + 1`. */
export function migrations(schema: string, table: string): string[] {
  return [
    // 0 → 1. COLLATE "C": list order is code-point (UTF-8 byte) order and prefix ranges use the index.
    `CREATE TABLE IF NOT EXISTS ${qualified(schema, table)} (
       resource   text COLLATE "C" PRIMARY KEY,
       owner      text   NOT NULL,
       token      bigint NOT NULL,
       expires_at bigint NOT NULL
     )`,
    // 1 → 2. Who is waiting for releases, so a release notifies only when someone is: one row per
    // watching connection and prefix, counted until `until` (server ms) unless refreshed.
    `CREATE TABLE IF NOT EXISTS ${qualified(schema, `${table}_wait`)} (
       watcher text   NOT NULL,
       prefix  text   COLLATE "C" NOT NULL,
       until   bigint NOT NULL,
       PRIMARY KEY (watcher, prefix)
     )`,
    // 2 → 3. Lease data (see postgres-record.ts for its form), in a table of its own: an UPDATE
    // writes a whole new row version, so data in the lease row (out of line only past ~2 KB)
    // would be written again by every renewal (1 KiB each made a renewal of 10,000 write five
    // times the WAL). No row, or NULL, is no data: what every record written before reads as.
    // The function of the same name reads a record's data on a snapshot of its own, taken when
    // it is called (a volatile PL/pgSQL function takes one per query; SQL would be inlined): a
    // grant calls it after locking the lease row, so it returns the data of every writer the
    // grant waited for, which the statement's own snapshot, taken before that wait, would miss.
    `CREATE TABLE IF NOT EXISTS ${qualified(schema, `${table}_data`)} (
       resource text COLLATE "C" PRIMARY KEY,
       data     bytea
     );
     CREATE OR REPLACE FUNCTION ${qualified(schema, `${table}_data`)}(text) RETURNS bytea
       LANGUAGE plpgsql VOLATILE
       AS $body$ BEGIN
         RETURN (SELECT d.data FROM ${qualified(schema, `${table}_data`)} AS d WHERE d.resource = $1);
       END $body$`,
  ];
}

export function setupStatements(schema: string, table: string) {
  const meta = qualified(schema, `${table}_meta`);
  return {
    /** Serialises leasehold's schema changes across every process; released at commit. */
    lock: `SELECT pg_advisory_xact_lock(hashtext($1::text))`,
    /** A row when the schema named `$1` exists. */
    schemaExists: `SELECT 1 FROM pg_namespace WHERE nspname = $1::text`,
    createSchema: `CREATE SCHEMA IF NOT EXISTS "${schema}"`,
    createMeta: `CREATE TABLE IF NOT EXISTS ${meta} (key text PRIMARY KEY, value bigint NOT NULL)`,
    readVersion: `SELECT value FROM ${meta} WHERE key = 'schema_version'`,
    writeVersion: `INSERT INTO ${meta} (key, value) VALUES ('schema_version', $1::bigint)
                   ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
  };
}

/**
 * Whether some watcher's live registration covers `resource` (on the statement's snapshot): the
 * only case in which a release queues a NOTIFY. With nobody waiting, a release reads an empty
 * table and takes no part in PostgreSQL's notification queue, whose lock serialises every
 * notifying commit.
 */
function awaited(wait: string, resource: string): string {
  return `EXISTS (
            SELECT FROM ${wait} AS w WHERE w.until > ${NOW} AND starts_with(${resource}, w.prefix))`;
}

/** The NOTIFY (sent at commit; `channel` the parameter naming it, the payload the resource) as a value: 0. */
function notified(resource: string, channel = '$4'): string {
  return `length(pg_notify(${channel}::text, ${resource})::text)`;
}

/**
 * One statement per transition, each a single round trip. Values are always bound parameters.
 * With `notify`, a release also notifies the watchers waiting for it (see `awaited`).
 */
export function statements(schema: string, table: string, notify: boolean) {
  const t = qualified(schema, table);
  const wait = qualified(schema, `${table}_wait`);
  const d = qualified(schema, `${table}_data`);
  // Renew, release and the data writes change only a valid row: a record that became corrupt is
  // not the caller's any more, and stays as it is.
  const valid = validRow(t);
  // A granted row's data, read after its lock (see the 2 → 3 migration).
  const handed = (row: string): string => `${d}(${row}.resource) AS data`;
  // A row's data on the statement's snapshot: for reads, and holders reported by acquireMany.
  const dataOf = (resource: string): string =>
    `(SELECT dd.data FROM ${d} AS dd WHERE dd.resource = ${resource})`;
  // Writes a renew's or release's data once its compare-and-set (the CTE `cas`) changed the row.
  const put = (data: string): string => `put AS (
                INSERT INTO ${d} AS dd (resource, data) SELECT resource, ${data}::bytea FROM cas
                ON CONFLICT (resource) DO UPDATE SET data = excluded.data)`;
  // A released row of a batch, with its NOTIFY if awaited.
  const released = (resource: string): string =>
    notify ? `CASE WHEN ${awaited(wait, resource)} THEN ${notified(resource)} END` : `1`;
  // A single release's new expires_at, 0, with its NOTIFY if awaited.
  const zero = (channel = '$4'): string =>
    notify
      ? `CASE WHEN ${awaited(wait, 'resource')} THEN ${notified('resource', channel)} ELSE 0 END`
      : `0`;
  return {
    // Insert the first record, or take over a released or expired one: one atomic statement.
    // excluded.expires_at − ttl is the statement's "now".
    acquire: `INSERT INTO ${t} AS l (resource, owner, token, expires_at)
              VALUES ($1::text, $2::text, 1, ${NOW} + $3::bigint)
              ON CONFLICT (resource) DO UPDATE
                SET owner = excluded.owner, token = ${nextToken('l')}, expires_at = excluded.expires_at
                WHERE l.owner = '' OR l.expires_at < excluded.expires_at - $3::bigint
                   OR NOT ${validRow('l')}
              RETURNING l.token, l.expires_at, ${handed('l')}`,
    // Many acquires in one statement, each the single acquire's compare-and-set, on one reading
    // of the server clock. `seen` is the statement's snapshot of the names: one live there is
    // refused at once, with that record as its holder, and never locked (so a batch does not
    // queue behind, or deadlock with, its holders' renewals). The rest go through the insert in
    // resource order, so racing batches lock rows in one order. A tried row the insert did not
    // take stays locked by it (ON CONFLICT locks what it compares), and `held` reads the record
    // that won it: FOR NO KEY UPDATE returns the newest version, not the snapshot's, without
    // waiting, and the array it probes is computed once, after the insert. A row another
    // transaction inserted after the snapshot is not visible there: its holder goes unreported.
    // Both reads take their names as an array computed in the statement (`= ANY (ARRAY(…))`),
    // whose size the planner cannot see, so they stay index probes at any batch size: a join
    // of 1,000 names was planned as a scan of the whole table, and `= ANY ($1)` of 10,000 as a
    // scan filtering every row against the whole array (0.5 s on 5,000 rows). No duplicates in
    // the input (checked before): ON CONFLICT cannot touch a row twice.
    acquireMany: `WITH input AS (
                    SELECT resource COLLATE "C" AS resource, ord
                    FROM unnest($1::text[]) WITH ORDINALITY AS i(resource, ord)),
                  now AS (SELECT ${NOW} AS ms),
                  seen AS (
                    SELECT l.resource, l.owner, l.token, l.expires_at,
                           l.owner = '' OR l.expires_at < now.ms OR NOT ${validRow('l')} AS free
                    FROM ${t} AS l, now WHERE l.resource = ANY (ARRAY(SELECT resource FROM input))),
                  granted AS (
                    INSERT INTO ${t} AS l (resource, owner, token, expires_at)
                    SELECT i.resource, $2::text, 1, now.ms + $3::bigint
                    FROM input i CROSS JOIN now LEFT JOIN seen s ON s.resource = i.resource
                    WHERE s.free IS NOT FALSE
                    ORDER BY i.resource
                    ON CONFLICT (resource) DO UPDATE
                      SET owner = excluded.owner, token = ${nextToken('l')}, expires_at = excluded.expires_at
                      WHERE l.owner = '' OR l.expires_at < excluded.expires_at - $3::bigint
                         OR NOT ${validRow('l')}
                    RETURNING l.resource, l.token, l.expires_at, ${handed('l')}),
                  held AS (
                    SELECT l.resource, l.owner, l.token, l.expires_at FROM ${t} AS l
                    WHERE l.resource = ANY (ARRAY(
                      SELECT s.resource FROM seen s
                      WHERE s.free AND NOT EXISTS (SELECT FROM granted g WHERE g.resource = s.resource)))
                    FOR NO KEY UPDATE OF l)
                  SELECT i.ord::int AS ord, g.token, g.expires_at, g.data,
                         coalesce(h.owner, s.owner) AS held_owner,
                         coalesce(h.token, s.token) AS held_token,
                         coalesce(h.expires_at, s.expires_at) AS held_expires_at,
                         CASE WHEN g.token IS NULL AND coalesce(h.owner, s.owner) IS NOT NULL
                           THEN ${dataOf('i.resource')} END AS held_data
                  FROM input i
                  LEFT JOIN granted g ON g.resource = i.resource
                  LEFT JOIN held h ON h.resource = i.resource
                  LEFT JOIN seen s ON NOT s.free AND s.resource = i.resource`,
    // A group, all or nothing, in one statement on one reading of the server clock. `blocked` is
    // the snapshot's answer: a member live there refuses the group at once, with nothing locked or
    // written (unless a member is corrupt: then the insert reaches it and fails, see `nextToken`). Otherwise every member goes through the single acquire's insert, in resource order
    // (the order acquireMany inserts and the batches lock in, so racing statements queue instead
    // of deadlocking), which locks each row it compares and decides on its newest version. Should
    // a member have been taken since the snapshot, the insert grants some but not all: the final
    // filter then divides by zero (SQLSTATE 22012, raised nowhere else), the statement fails and
    // PostgreSQL undoes every row it wrote, so a refused group leaves no record or token changed.
    // The tally is a runtime value, so the planner cannot fold the division away.
    acquireAll: `WITH input AS (
                   SELECT resource COLLATE "C" AS resource, ord
                   FROM unnest($1::text[]) WITH ORDINALITY AS i(resource, ord)),
                 now AS (SELECT ${NOW} AS ms),
                 blocked AS (
                   SELECT coalesce(bool_or(NOT (l.owner = '' OR l.expires_at < now.ms))
                                   AND bool_and(${validRow('l')}), false) AS yes
                   FROM ${t} AS l, now WHERE l.resource = ANY (ARRAY(SELECT resource FROM input))),
                 granted AS (
                   INSERT INTO ${t} AS l (resource, owner, token, expires_at)
                   SELECT i.resource, $2::text, 1, now.ms + $3::bigint
                   FROM input i CROSS JOIN now CROSS JOIN blocked
                   WHERE NOT blocked.yes
                   ORDER BY i.resource
                   ON CONFLICT (resource) DO UPDATE
                     SET owner = excluded.owner, token = ${nextToken('l')}, expires_at = excluded.expires_at
                     WHERE l.owner = '' OR l.expires_at < excluded.expires_at - $3::bigint
                        OR NOT ${validRow('l')}
                   RETURNING l.resource, l.token, l.expires_at, ${handed('l')}),
                 tally AS (SELECT count(*) AS n FROM granted)
                 SELECT i.ord::int AS ord, g.token, g.expires_at, g.data
                 FROM tally CROSS JOIN input i JOIN granted g ON g.resource = i.resource
                 WHERE 1 / (tally.n IN (0, cardinality($1::text[])))::int = 1`,
    // The first free candidate, in the given order, in one statement on one reading of the clock.
    // `fresh` is the first candidate with no record in the snapshot, when it comes before every
    // written candidate the snapshot shows free: it goes through the single acquire's insert,
    // holding no other lock while that may wait. Only when it was not granted (someone created
    // the record since) does `taken` run: the first written candidate free on its newest version,
    // locked; one another statement has locked is passed over (SKIP LOCKED), so callers racing for
    // the same permits spread out and never wait. `taken` never waits while holding a row, so it
    // cannot close a deadlock. When `fresh` was created by another since the snapshot and nothing
    // was taken, the answer is that candidate with a null token: the caller asks again, and the
    // record it lost is in the next snapshot (see `PostgresStore.doAcquireFirst`). A free record
    // another statement holds locked at that moment is passed over, as SKIP LOCKED says.
    acquireFirst: `WITH input AS (
                     SELECT resource COLLATE "C" AS resource, ord
                     FROM unnest($1::text[]) WITH ORDINALITY AS i(resource, ord)),
                   now AS (SELECT ${NOW} AS ms),
                   seen AS (
                     SELECT l.resource,
                            l.owner = '' OR l.expires_at < now.ms OR NOT ${validRow('l')} AS free
                     FROM ${t} AS l, now WHERE l.resource = ANY (ARRAY(SELECT resource FROM input))),
                   fresh AS (
                     SELECT i.resource FROM input i
                     WHERE NOT EXISTS (SELECT FROM seen s WHERE s.resource = i.resource)
                       AND i.ord < coalesce(
                         (SELECT min(f.ord) FROM input f JOIN seen s ON s.resource = f.resource
                          WHERE s.free),
                         cardinality($1::text[]) + 1)
                     ORDER BY i.ord LIMIT 1),
                   inserted AS (
                     INSERT INTO ${t} AS l (resource, owner, token, expires_at)
                     SELECT f.resource, $2::text, 1, now.ms + $3::bigint FROM fresh f CROSS JOIN now
                     ON CONFLICT (resource) DO UPDATE
                       SET owner = excluded.owner, token = ${nextToken('l')}, expires_at = excluded.expires_at
                       WHERE l.owner = '' OR l.expires_at < excluded.expires_at - $3::bigint
                          OR NOT ${validRow('l')}
                     RETURNING l.resource, l.token, l.expires_at, ${handed('l')}),
                   taken AS (
                     SELECT l.resource FROM ${t} AS l JOIN input i ON i.resource = l.resource, now
                     WHERE NOT EXISTS (SELECT FROM inserted)
                       AND l.resource = ANY (ARRAY(SELECT resource FROM seen WHERE free))
                       AND (l.owner = '' OR l.expires_at < now.ms OR NOT ${validRow('l')})
                     ORDER BY i.ord LIMIT 1
                     FOR NO KEY UPDATE OF l SKIP LOCKED),
                   updated AS (
                     UPDATE ${t} AS l
                     SET owner = $2::text, token = ${nextToken('l')}, expires_at = now.ms + $3::bigint
                     FROM taken, now
                     WHERE l.resource = taken.resource
                       AND (l.owner = '' OR l.expires_at < now.ms OR NOT ${validRow('l')})
                     RETURNING l.resource, l.token, l.expires_at, ${handed('l')})
                   SELECT resource, token, expires_at, data FROM inserted
                   UNION ALL SELECT resource, token, expires_at, data FROM updated
                   UNION ALL SELECT resource, NULL, NULL, NULL FROM fresh
                     WHERE NOT EXISTS (SELECT FROM inserted) AND NOT EXISTS (SELECT FROM updated)`,
    renew: `UPDATE ${t} SET expires_at = ${NOW} + $4::bigint
            WHERE resource = $1::text AND owner = $2::text AND token = $3::bigint AND ${valid}
            RETURNING expires_at`,
    // The answer is the row count alone (returning rows costs the server and the client more
    // than the check). The NOTIFY rides in the assignment, evaluated once the row matched; should
    // a concurrent change of the row make the update give way after that, the NOTIFY is sent
    // anyway: a watcher tries, and is refused.
    release: `UPDATE ${t} SET owner = '', expires_at = ${zero()}
              WHERE resource = $1::text AND owner = $2::text AND token = $3::bigint AND ${valid}`,
    // Lease data lives in its own table, which renew, release and the batches never name: they
    // neither carry nor rewrite it. The three data writes are each one statement: the same
    // compare-and-set on owner and token (renew's and release's own UPDATE, or for writeData a
    // lock of the row as it is, which waits for a grant under way and then re-checks owner and
    // token on the row it left), and the data written only when it held. Every writer holds the
    // lease row locked while it writes the data, so a grant waits for it (see `handed`).
    writeData: `WITH cas AS (
                  SELECT resource FROM ${t}
                  WHERE resource = $1::text AND owner = $2::text AND token = $3::bigint AND ${valid}
                  FOR NO KEY UPDATE)
                INSERT INTO ${d} AS dd (resource, data) SELECT resource, $4::bytea FROM cas
                ON CONFLICT (resource) DO UPDATE SET data = excluded.data`,
    // (resource, owner, token, ttl, data)
    renewData: `WITH cas AS (
                  UPDATE ${t} SET expires_at = ${NOW} + $4::bigint
                  WHERE resource = $1::text AND owner = $2::text AND token = $3::bigint AND ${valid}
                  RETURNING resource, expires_at),
                ${put('$5')}
                SELECT expires_at FROM cas`,
    // (resource, owner, token, data, channel when notifying)
    releaseData: `WITH cas AS (
                    UPDATE ${t} SET owner = '', expires_at = ${zero('$5')}
                    WHERE resource = $1::text AND owner = $2::text AND token = $3::bigint AND ${valid}
                    RETURNING resource),
                  ${put('$4')}
                  SELECT 1 AS released FROM cas`,
    // The batches lock every row they name in resource order (the order acquireMany inserts in)
    // before changing any: two batches over the same rows, in whatever order they were given or
    // however each is planned, queue instead of deadlocking. `locked` takes the locks in index
    // order (FOR … UPDATE applies after ORDER BY) and counts them; the update joins that one-row
    // count, so it cannot change a row before every lock is held. Rows no longer the caller's
    // stay locked too, until commit.
    //
    // Every lease in one statement. Duplicates of one (resource, owner, token) update the row once
    // (with the longest TTL asked for) and all of them succeed, as they would one after another.
    renewMany: `WITH input AS (
                  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
                    WITH ORDINALITY AS i(resource, owner, token, ttl, ord)),
                now AS (SELECT ${NOW} AS ms),
                want AS (
                  SELECT resource, owner, token, max(ttl) AS ttl FROM input
                  GROUP BY resource, owner, token),
                locked AS (
                  SELECT count(*) AS n FROM (
                    SELECT FROM ${t} AS l WHERE l.resource = ANY (ARRAY(SELECT resource FROM want))
                    ORDER BY l.resource FOR NO KEY UPDATE OF l) AS rows),
                done AS (
                  UPDATE ${t} AS l SET expires_at = now.ms + w.ttl
                  FROM want w, now, locked
                  WHERE l.resource = w.resource AND l.owner = w.owner AND l.token = w.token
                    AND ${validRow('l')}
                  RETURNING l.resource, l.owner, l.token, l.expires_at)
                SELECT i.ord::int AS ord, d.expires_at FROM input i
                JOIN done d ON d.resource = i.resource AND d.owner = i.owner AND d.token = i.token`,
    // Every lease in one statement. Of duplicates, only the first succeeds, as one after another:
    // after a release the owner no longer matches.
    releaseMany: `WITH input AS (
                    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
                      WITH ORDINALITY AS i(resource, owner, token, ord)),
                  want AS (
                    SELECT resource, owner, token, min(ord) AS ord FROM input
                    GROUP BY resource, owner, token),
                  locked AS (
                    SELECT count(*) AS n FROM (
                      SELECT FROM ${t} AS l WHERE l.resource = ANY (ARRAY(SELECT resource FROM want))
                      ORDER BY l.resource FOR NO KEY UPDATE OF l) AS rows),
                  done AS (
                    UPDATE ${t} AS l SET owner = '', expires_at = 0
                    FROM want w, locked
                    WHERE l.resource = w.resource AND l.owner = w.owner AND l.token = w.token
                      AND ${validRow('l')}
                    RETURNING w.ord, l.resource)
                  SELECT ord::int AS ord, ${released('resource')} AS released FROM done`,
    // The first record of the names $1 that an acquire refuses as corrupt (see `nextToken`), read
    // only after such a refusal, to say what is wrong with it.
    invalid: `SELECT l.resource, l.owner, l.token, l.expires_at FROM ${t} AS l
              WHERE l.resource = ANY (ARRAY(SELECT r COLLATE "C" FROM unnest($1::text[]) AS r))
                AND NOT (${validRow('l')} AND l.token < ${SAFE_MAX})
              ORDER BY l.resource LIMIT 1`,
    get: `SELECT owner, token, expires_at, ${dataOf('$1::text')} AS data
          FROM ${t} WHERE resource = $1::text`,
    // The column's "C" collation makes these comparisons byte order, so they run on the primary key.
    // `after` ('' from the start) is a second lower bound; the index scan starts at the higher one.
    // Each record's data is one probe of the data table's key.
    listRange: `SELECT l.resource, l.owner, l.token, l.expires_at, ${dataOf('l.resource')} AS data
                FROM ${t} AS l
                WHERE l.resource >= $1::text AND l.resource < $2::text AND l.resource > $3::text
                ORDER BY l.resource LIMIT $4::int`,
    listFrom: `SELECT l.resource, l.owner, l.token, l.expires_at, ${dataOf('l.resource')} AS data
               FROM ${t} AS l
               WHERE l.resource >= $1::text AND l.resource > $2::text
               ORDER BY l.resource LIMIT $3::int`,
  };
}

export type Statements = ReturnType<typeof statements>;

/**
 * What the watch connection runs. `register` ($1 the watcher's id, $2 its prefixes, $3 how long the
 * rows count) makes those prefixes "waited for" until refreshed, drops the watcher's other
 * prefixes, and clears lapsed rows of watchers that vanished; `unregister` ($1) removes its rows.
 */
export function watchStatements(schema: string, table: string) {
  const wait = qualified(schema, `${table}_wait`);
  return {
    register: `WITH mine AS (
                 INSERT INTO ${wait} AS w (watcher, prefix, until)
                 SELECT $1::text, p, ${NOW} + $3::bigint FROM unnest($2::text[]) AS p
                 ON CONFLICT (watcher, prefix) DO UPDATE SET until = excluded.until
                 RETURNING 1),
               gone AS (
                 DELETE FROM ${wait}
                 WHERE (watcher = $1::text AND prefix <> ALL ($2::text[]))
                    OR (watcher <> $1::text AND until < ${NOW}))
               SELECT count(*)::int AS n FROM mine`,
    unregister: `DELETE FROM ${wait} WHERE watcher = $1::text`,
  };
}

/** Prepared statement names are per connection; the digest keeps two tables' statements apart. */
export function statementName(key: string, text: string): string {
  return `leasehold_${key}_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
}

/** The parallel arrays (resource, owner, token) the batch statements unnest. */
export function columns(leases: readonly LeaseRef[]): [string[], string[], number[]] {
  return [
    leases.map((lease) => lease.resource),
    leases.map((lease) => lease.owner),
    leases.map((lease) => lease.token),
  ];
}
