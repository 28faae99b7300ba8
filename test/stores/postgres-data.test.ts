import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LIMITS, type Lease, type LeaseStore } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import type { PgPoolClient, PgQueryConfig } from '../../src/stores/postgres/postgres-driver.js';
import { SCHEMA_VERSION, statements } from '../../src/stores/postgres/postgres-ops.js';
import { freshNamespace } from '../conformance/factory.js';
import { describeServer } from '../harness/describe-server.js';
import { countingPool, type CountingPool } from '../harness/pg-counting-pool.js';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import { waitFor } from '../harness/processes.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Exactly `LIMITS.dataMaxBytes` (4,096) UTF-8 bytes of 1-, 2-, 3- and 4-byte characters, U+0000
 * included (which a PostgreSQL text column could not hold): 409 groups of 10 bytes, then two
 * 3-byte characters.
 */
const MULTI_BYTE = '\u0000é€😀'.repeat(409) + '€€';

describeServer('PostgresStore lease data', postgresUnavailable(), () => {
  let server: PostgresServer;
  let admin: pg.Pool;
  const stores: LeaseStore[] = [];
  const pools: CountingPool[] = [];
  const track = <S extends LeaseStore>(store: S): S => (stores.push(store), store);

  beforeAll(async () => {
    server = await PostgresServer.start();
    admin = new pg.Pool({ connectionString: server.url, max: 3 });
    admin.on('error', () => {});
  });
  afterAll(async () => {
    await Promise.allSettled(stores.map((s) => s.close()));
    await Promise.allSettled(pools.map((p) => p.pool.end()));
    await admin?.end();
    await server?.stop();
  });

  /** A store on a fresh table over a pool that counts statements and round trips, set up. */
  async function counted(): Promise<{
    store: PostgresStore;
    table: string;
    measure: <T>(call: () => Promise<T>) => Promise<{ result: T; counts: [number, number] }>;
    sent: PgQueryConfig[];
  }> {
    const pool = countingPool(server.url);
    pools.push(pool);
    // Every statement as sent, values included.
    const sent: PgQueryConfig[] = [];
    const recording = new WeakSet<object>();
    const connect = pool.pool.connect.bind(pool.pool) as () => Promise<PgPoolClient>;
    pool.pool.connect = (async () => {
      const client = await connect();
      if (!recording.has(client)) {
        recording.add(client);
        const query = client.query.bind(client);
        client.query = (config) => (sent.push(config), query(config));
      }
      return client;
    }) as typeof pool.pool.connect;
    const table = freshNamespace();
    const store = track(new PostgresStore(pool.pool, { table }));
    await store.init();
    const measure = async <T>(call: () => Promise<T>) => {
      const [s0, r0] = [pool.statements(), pool.roundTrips()];
      const result = await call();
      return {
        result,
        counts: [pool.statements() - s0, pool.roundTrips() - r0] as [number, number],
      };
    };
    return { store, table, measure, sent };
  }

  it('writeData, renew and release with data are one statement and one round trip each', async () => {
    const { store, measure } = await counted();
    const lease = (await store.tryAcquire('rt/a', 'a', 5000))!;
    const write = await measure(() => store.writeData(lease, 'v1'));
    const renew = await measure(() => store.renew(lease, 6000, new Uint8Array([1, 2])));
    const release = await measure(() => store.release(lease, 'last'));
    expect([write, renew, release].map((m) => m.counts)).toEqual([
      [1, 1],
      [1, 1],
      [1, 1],
    ]);
    expect([write.result, renew.result?.data, renew.result?.token, release.result]).toEqual([
      true,
      new Uint8Array([1, 2]),
      lease.token,
      true,
    ]);
    // Refused the same way, nothing written.
    const late = await measure(() => store.writeData(lease, 'late'));
    const lateRenew = await measure(() => store.renew(lease, 6000, 'late'));
    const lateRelease = await measure(() => store.release(lease, 'late'));
    expect([late, lateRenew, lateRelease].map((m) => [m.result, ...m.counts])).toEqual([
      [false, 1, 1],
      [null, 1, 1],
      [false, 1, 1],
    ]);
    expect(await store.get('rt/a')).toMatchObject({ owner: '', data: 'last' });
  });

  it('a release with data while a watcher waits is still one statement, and notifies', async () => {
    const { store, table, measure } = await counted();
    const watcher = track(await PostgresStore.open(server.url, { table }));
    const events: string[] = [];
    watcher.watch('w/', (event) => events.push(`${event.type} ${event.resource}`));
    await waitFor('the registration', async () => {
      const { rows } = await admin.query(`SELECT 1 FROM "${table}_wait"`);
      return rows.length > 0;
    });
    const lease = (await store.tryAcquire('w/a', 'a', 5000))!;
    const release = await measure(() => store.release(lease, 'bye'));
    expect([release.result, ...release.counts]).toEqual([true, 1, 1]);
    await waitFor('the release event', () => events.length > 0, 5000);
    expect(events).toEqual(['released w/a']);
    expect((await watcher.get('w/a'))?.data).toBe('bye');
  });

  it('every grant hands the data over in the statement that grants it: after release, after expiry, in batches and groups', async () => {
    const { store, measure } = await counted();
    const first = (await store.tryAcquire('g/a', 'a', 5000))!;
    await store.release(first, 'left by a');
    const afterRelease = await measure(() => store.tryAcquire('g/a', 'b', 150));
    expect(afterRelease.result).toMatchObject({ owner: 'b', data: 'left by a' });
    expect(afterRelease.counts).toEqual([1, 1]);
    await store.writeData(afterRelease.result!, new Uint8Array([0, 255]));
    await sleep(250);
    const afterExpiry = await measure(() => store.tryAcquire('g/a', 'c', 5000));
    expect(afterExpiry.result).toMatchObject({ owner: 'c', token: first.token + 2 });
    expect(afterExpiry.result!.data).toEqual(new Uint8Array([0, 255]));
    expect(afterExpiry.counts).toEqual([1, 1]);
    await store.release(afterExpiry.result!, 'for the batch');

    const many = await measure(() => store.acquireMany(['g/a', 'g/new'], 'd', 5000));
    expect(many.result.map((o) => o.lease?.data ?? null)).toEqual(['for the batch', null]);
    expect(many.result[1]!.lease).not.toHaveProperty('data');
    expect(many.counts).toEqual([1, 1]);
    // A refusal reports the holder with its data, in the same statement.
    const refused = await measure(() => store.acquireMany(['g/a'], 'x', 5000));
    expect(refused.result[0]!.holder).toMatchObject({ owner: 'd', data: 'for the batch' });
    expect(refused.counts).toEqual([1, 1]);
    await store.releaseMany(many.result.map((o) => o.lease!));

    const group = await measure(() => store.acquireAll(['g/new', 'g/a'], 'e', 5000));
    expect(group.result!.map((l) => l.data ?? null)).toEqual([null, 'for the batch']);
    expect(group.counts).toEqual([1, 1]);
    await store.releaseMany(group.result!);

    const firstFree = await measure(() => store.acquireFirst(['g/a', 'g/new'], 'f', 5000));
    expect(firstFree.result).toMatchObject({ resource: 'g/a', data: 'for the batch' });
    expect(firstFree.counts).toEqual([1, 1]);
    // A never-written candidate taken by acquireFirst has no data.
    const fresh = await store.acquireFirst(['g/never'], 'f', 5000);
    expect(fresh).not.toHaveProperty('data');
  });

  it('batches and list pages whose records carry much data go as several statements, each outcome exact', async () => {
    const { store, table, measure } = await counted();
    const names = Array.from({ length: 600 }, (_, i) => `big/${String(i).padStart(3, '0')}`);
    // No data seen yet: 600 resources are one statement, and so is a list of them.
    const seeded = await measure(() => store.acquireMany(names, 'seed', 60_000));
    expect(seeded.counts).toEqual([1, 1]);
    expect((await measure(() => store.list({ prefix: 'big/', limit: 1000 }))).counts).toEqual([
      1, 1,
    ]);
    const value = (i: number): string => `${i}:`.padEnd(LIMITS.dataMaxBytes, 'd');
    await Promise.all(seeded.result.map((o, i) => store.release(o.lease!, value(i))));
    // 600 × 4 KiB (2.4 MB) to hand over, as this store knows from the data it wrote: pieces of
    // about 256 KiB of data each, every resource granted with its own data.
    const granted = await measure(() => store.acquireMany(names, 'holder', 60_000));
    expect(granted.counts[0]).toBeGreaterThan(6);
    expect(granted.result.map((o) => [o.resource, o.lease?.owner, o.lease?.data])).toEqual(
      names.map((n, i) => [n, 'holder', value(i)]),
    );
    // Another handle knows nothing yet: its first statement learns from the records it read.
    const fresh = track(new PostgresStore(pools.at(-1)!.pool, { table }));
    await fresh.init();
    const refused = await measure(() => fresh.acquireMany(names, 'other', 60_000));
    expect(refused.counts[0]).toBe(1);
    expect(refused.result.every((o, i) => !o.lease && o.holder?.data === value(i))).toBe(true);
    expect(
      (await measure(() => fresh.acquireMany(names, 'other', 60_000))).counts[0],
    ).toBeGreaterThan(6);
    expect(refused.result.every((o, i) => !o.lease && o.holder?.data === value(i))).toBe(true);
    const listed = await measure(() => store.list({ prefix: 'big/', limit: 1000 }));
    expect(listed.counts[0]).toBeGreaterThan(6);
    expect(listed.result.map((r) => [r.resource, r.data])).toEqual(
      names.map((n, i) => [n, value(i)]),
    );
    // The data gone, batches grow back to one statement within a few replies.
    await store.releaseMany(granted.result.map((o) => o.lease!));
    const clearing = await store.acquireMany(names, 'z', 60_000);
    await Promise.all(clearing.map((o) => store.writeData(o.lease!, null)));
    await store.releaseMany(clearing.map((o) => o.lease!));
    const again = await store.acquireMany(names, 'again', 60_000);
    expect(again.every((o) => o.lease && !('data' in o.lease))).toBe(true);
    await store.releaseMany(again.map((o) => o.lease!));
    const after = await measure(() => store.acquireMany(names, 'plain', 60_000));
    expect(after.counts).toEqual([1, 1]);
  });

  it("a grant that waited for a writer's lock hands over what that writer wrote", async () => {
    const { store, table } = await counted();
    const sql = statements('public', table, true);
    for (const [resource, before] of [
      ['wait/fresh', null],
      ['wait/kept', 'early'],
    ] as const) {
      const old = (await store.tryAcquire(resource, 'a', 150))!;
      if (before) await store.writeData(old, before);
      await sleep(250); // expired
      // The ex-holder's writeData, by its own statement, still open when the takeover is tried.
      const writer = await admin.connect();
      try {
        await writer.query('BEGIN');
        const wrote = await writer.query(sql.writeData, [
          resource,
          'a',
          old.token,
          Buffer.from('slate', 'utf8'),
        ]);
        expect(wrote.rowCount).toBe(1);
        const taking = store.tryAcquire(resource, 'b', 5000);
        await waitFor('the grant to wait for the row', async () => {
          const { rows } = await admin.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'`,
          );
          return rows[0].n > 0;
        });
        await writer.query('COMMIT');
        // 'slate' is 's' + 'late': the string "late".
        expect(await taking).toMatchObject({ owner: 'b', token: old.token + 1, data: 'late' });
      } finally {
        writer.release();
      }
    }
  });

  it('renewals and releases without data neither carry the data nor rewrite it', async () => {
    const { store, table, measure, sent } = await counted();
    const names = Array.from({ length: 1000 }, (_, i) => `keep/${i}`);
    const leases = (await store.acquireMany(names, 'a', 60_000)).map((o) => o.lease!);
    const bare = (
      await store.acquireMany(
        names.map((n) => n.replace('keep/', 'bare/')),
        'a',
        60_000,
      )
    ).map((o) => o.lease!);
    // 1 KiB that does not compress: in the lease row, it would stay inline and be copied into
    // every new row version.
    const noise = (i: number): Uint8Array =>
      new Uint8Array(1024).map((_, k) => (Math.imul(i * 1031 + k, 2654435761) >>> 13) & 255);
    for (const [i, lease] of leases.entries()) await store.writeData(lease, noise(i));
    // A witness in the database: every write to the data table is logged.
    await admin.query(`CREATE TABLE "${table}_touched" (resource text);
      CREATE FUNCTION "${table}_touch"() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO "${table}_touched" VALUES (coalesce(NEW.resource, OLD.resource)); RETURN NULL; END $$;
      CREATE TRIGGER touched AFTER INSERT OR UPDATE OR DELETE ON "${table}_data"
        FOR EACH ROW EXECUTE FUNCTION "${table}_touch"()`);
    const touched = async (): Promise<number> =>
      (await admin.query(`SELECT count(*)::int AS n FROM "${table}_touched"`)).rows[0].n;
    const wal = async (): Promise<string> =>
      (await admin.query(`SELECT pg_current_wal_insert_lsn()::text AS lsn`)).rows[0].lsn;
    const walSince = async (from: string): Promise<number> =>
      Number(
        (
          await admin.query(
            `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1)::bigint AS n`,
            [from],
          )
        ).rows[0].n,
      );

    // Warm both sets once (first touches of pages after a checkpoint write whole pages).
    await store.renewMany(leases);
    await store.renewMany(bare);
    const start = sent.length;
    let from = await wal();
    const withData = await measure(() => store.renewMany(leases, 60_000));
    const withDataWal = await walSince(from);
    from = await wal();
    const without = await measure(() => store.renewMany(bare, 60_000));
    const withoutWal = await walSince(from);
    expect(withData.result.every((l) => l !== null)).toBe(true);
    expect([withData.counts, without.counts]).toEqual([
      [1, 1],
      [1, 1],
    ]);
    // Nothing of the data is sent, and the statement does not name the data table.
    const renewals = sent.slice(start);
    expect(renewals.map((c) => c.text)).toEqual([
      statements('public', table, true).renewMany,
      statements('public', table, true).renewMany,
    ]);
    expect(renewals[0]!.text).not.toContain('_data');
    expect(JSON.stringify(renewals[0]!.values).length).toBe(
      JSON.stringify(renewals[1]!.values).length,
    );
    // And it costs the server what renewing records without data costs (WAL written).
    console.log(
      'WAL of renewMany(1000): with 1 KiB data',
      withDataWal,
      'bytes; without',
      withoutWal,
    );
    expect(withDataWal).toBeLessThan(withoutWal * 1.5);

    await store.renew(leases[0]!);
    await store.release(leases[1]!);
    await store.releaseMany(leases.slice(2));
    expect(await touched()).toBe(0);
    const kept = await admin.query(
      `SELECT count(*)::int AS n FROM "${table}_data" WHERE length(data) = 1025`,
    );
    expect(kept.rows[0].n).toBe(leases.length);
    // The witness does see a write of the data.
    await store.writeData(bare[0]!, 'x');
    expect(await touched()).toBe(1);
  });

  it('keeps LIMITS.dataMaxBytes of multi-byte text and of bytes exactly, as s/b + the bytes', async () => {
    const { store, table } = await counted();
    const text = MULTI_BYTE;
    expect(Buffer.byteLength(text)).toBe(LIMITS.dataMaxBytes);
    const bytes = new Uint8Array(LIMITS.dataMaxBytes).map((_, i) => (i * 7) % 256);
    const a = (await store.tryAcquire('limit/text', 'a', 5000))!;
    const b = (await store.tryAcquire('limit/bytes', 'a', 5000))!;
    expect(await store.writeData(a, text)).toBe(true);
    expect(await store.release(b, bytes)).toBe(true);
    expect((await store.get('limit/text'))!.data).toBe(text);
    const read = (await store.list({ prefix: 'limit/b' }))[0]!.data;
    expect(read).toEqual(bytes);
    expect(Buffer.isBuffer(read)).toBe(false);
    expect((await store.tryAcquire('limit/bytes', 'b', 5000))!.data).toEqual(bytes);
    const stored = await admin.query(
      `SELECT resource, chr(get_byte(data, 0)) AS form, length(data) AS n FROM "${table}_data" ORDER BY 1`,
    );
    expect(stored.rows).toEqual([
      { resource: 'limit/bytes', form: 'b', n: 4097 },
      { resource: 'limit/text', form: 's', n: 4097 },
    ]);
    // A value in no known form was written by something else: a corrupt record, said so.
    await admin.query(
      `UPDATE "${table}_data" SET data = '\\x7a'::bytea WHERE resource = 'limit/text'`,
    );
    await expect(store.get('limit/text')).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      retryable: false,
      message: expect.stringContaining("not in leasehold's form"),
    });
  });

  it('upgrades a table of the release before lease data: old records read with none and take data', async () => {
    const table = freshNamespace();
    // Schema version 2 exactly as that release created it.
    await admin.query(`CREATE TABLE "${table}_meta" (key text PRIMARY KEY, value bigint NOT NULL)`);
    await admin.query(`CREATE TABLE "${table}" (
        resource text COLLATE "C" PRIMARY KEY, owner text NOT NULL, token bigint NOT NULL,
        expires_at bigint NOT NULL)`);
    await admin.query(`CREATE TABLE "${table}_wait" (watcher text NOT NULL,
        prefix text COLLATE "C" NOT NULL, until bigint NOT NULL, PRIMARY KEY (watcher, prefix))`);
    await admin.query(`INSERT INTO "${table}_meta" VALUES ('schema_version', 2)`);
    const until = Date.now() + 60_000;
    await admin.query(
      `INSERT INTO "${table}" VALUES ('old/held', 'them', 7, $1), ('old/free', '', 4, 0)`,
      [until],
    );

    const store = track(await PostgresStore.open(server.url, { table }));
    const held = await store.get('old/held');
    const meta = await admin.query(`SELECT value FROM "${table}_meta"`);
    expect([meta.rows, SCHEMA_VERSION]).toEqual([[{ value: '3' }], 3]);
    expect(held).toEqual({ resource: 'old/held', owner: 'them', token: 7, expiresAt: until });
    expect(await store.list({ prefix: 'old/' })).toEqual([
      { resource: 'old/free', owner: '', token: 4, expiresAt: 0 },
      held,
    ]);
    // The old holder's record takes data under its token, as a grant made by this release would.
    const theirs: Lease = { ...held!, ttlMs: 60_000 };
    expect(await store.writeData(theirs, 'from them')).toBe(true);
    const lease = (await store.tryAcquire('old/free', 'me', 5000))!;
    expect(lease).toMatchObject({ owner: 'me', token: 5 });
    expect(lease).not.toHaveProperty('data');
    expect((await store.renew(lease, 5000, 'renewed'))!.data).toBe('renewed');
    expect(await store.release(lease, 'released')).toBe(true);
    expect((await store.tryAcquire('old/free', 'next', 5000))!.data).toBe('released');
    expect((await store.get('old/held'))!.data).toBe('from them');

    // A process still on the old release keeps working on the upgraded table, and its
    // statements (which never name the data) leave the data where it is.
    await admin.query(
      `UPDATE "${table}" SET owner = '', expires_at = 0 WHERE resource = $1 AND owner = $2 AND token = $3`,
      ['old/held', 'them', 7],
    );
    await admin.query(
      `INSERT INTO "${table}" AS l (resource, owner, token, expires_at)
       VALUES ($1::text, $2::text, 1, (extract(epoch from clock_timestamp()) * 1000)::bigint + $3::bigint)
       ON CONFLICT (resource) DO UPDATE
         SET owner = excluded.owner, token = l.token + 1, expires_at = excluded.expires_at
         WHERE l.owner = '' OR l.expires_at < excluded.expires_at - $3::bigint
       RETURNING l.token, l.expires_at`,
      ['old/held', 'old-process', 5000],
    );
    expect(await store.get('old/held')).toMatchObject({
      owner: 'old-process',
      token: 8,
      data: 'from them',
    });
  });
});
