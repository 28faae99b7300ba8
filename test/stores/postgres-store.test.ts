import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  LeaseError,
  openStore,
  type AcquireOutcome,
  type Lease,
  type LeaseStore,
} from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { statements } from '../../src/stores/postgres/postgres-ops.js';
import { BATCH_ROWS } from '../../src/stores/postgres/postgres-store.js';
import { freshNamespace } from '../conformance/factory.js';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import { freePort } from '../harness/ports.js';
import { waitFor } from '../harness/processes.js';
import { describeServer } from '../harness/describe-server.js';
import { countingPool } from '../harness/pg-counting-pool.js';
import { shuffled } from '../harness/shuffled.js';
import { sqlBatchRaces } from './sql-batch-races.js';

const unavailable = postgresUnavailable();

describeServer('PostgresStore', unavailable, () => {
  let server: PostgresServer;
  let admin: pg.Pool;
  const stores: LeaseStore[] = [];
  const track = <S extends LeaseStore>(store: S): S => (stores.push(store), store);
  const open = (query = ''): Promise<LeaseStore> =>
    openStore(`${server.url}?table=${freshNamespace()}${query}`).then(track);

  beforeAll(async () => {
    server = await PostgresServer.start();
    admin = new pg.Pool({ connectionString: server.url, max: 2 });
    // end() resolves before its connections have closed; the server stopping right after may
    // still reach one with its shutdown notice, which the pool would raise as an error.
    admin.on('error', () => {});
  });
  afterAll(async () => {
    await Promise.allSettled(stores.map((s) => s.close()));
    await admin?.end();
    await server?.stop();
  });

  /** Resolves once some statement waits for a row lock. */
  async function waitForLockWait(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const { rows } = await admin.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'`,
      );
      if (rows[0].n > 0) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('no statement started waiting for a lock');
  }

  it('does every operation, batches of 1,000 included, in one statement and one round trip', async () => {
    const counted = countingPool(server.url);
    const table = freshNamespace();
    const store = track(new PostgresStore(counted.pool, { table }));
    await store.init();
    const measured: Record<string, [number, number]> = {};
    const measure = async <T>(name: string, call: () => Promise<T>): Promise<T> => {
      const [s0, r0] = [counted.statements(), counted.roundTrips()];
      const result = await call();
      measured[name] = [counted.statements() - s0, counted.roundTrips() - r0];
      return result;
    };
    const lease = (await measure('tryAcquire', () => store.tryAcquire('rt/one', 'a', 5000)))!;
    await measure('tryAcquire (held)', () => store.tryAcquire('rt/one', 'b', 5000));
    await measure('renew', () => store.renew(lease));
    await measure('get', () => store.get('rt/one'));
    await measure('list', () => store.list({ prefix: 'rt/' }));
    await measure('release', () => store.release(lease));
    const names = Array.from({ length: 1000 }, (_, i) => `rt/many/${i}`);
    const many = (await store.acquireMany(names, 'a', 5000)).map((o) => o.lease!);
    await measure('renewMany(1000)', () => store.renewMany(many));
    await measure('releaseMany(1000)', () => store.releaseMany(many));
    // With a watcher waiting, a release still is one statement: the NOTIFY rides along.
    const watcher = track(await PostgresStore.open(server.url, { table }));
    watcher.watch('', () => {});
    await waitFor('the registration', async () => {
      const { rows } = await admin.query(`SELECT 1 FROM "${table}_wait"`);
      return rows.length > 0;
    });
    const again = (await store.tryAcquire('rt/one', 'a', 5000))!;
    await measure('release (watched)', () => store.release(again));
    const more = (await store.acquireMany(names, 'a', 5000)).map((o) => o.lease!);
    await measure('releaseMany(1000) (watched)', () => store.releaseMany(more));
    console.log('statements, round trips per operation:', measured);
    expect(Object.keys(measured)).toHaveLength(10);
    for (const [name, counts] of Object.entries(measured))
      expect([name, ...counts]).toEqual([name, 1, 1]);
    await counted.pool.end();
  });

  it('renews and releases more than BATCH_ROWS leases as consecutive statements, each lease answered', async () => {
    const counted = countingPool(server.url);
    const store = track(new PostgresStore(counted.pool, { table: freshNamespace() }));
    await store.init();
    const names = Array.from({ length: BATCH_ROWS + 5 }, (_, i) => `big/${i}`);
    const leases: Lease[] = [];
    for (let i = 0; i < names.length; i += 5000)
      for (const o of await store.acquireMany(names.slice(i, i + 5000), 'a', 30_000))
        leases.push(o.lease!);
    // The last lease also appears first, with a stale token: refused, every other one renewed.
    const stale = { ...leases.at(-1)!, token: leases.at(-1)!.token + 1 };
    let s0 = counted.statements();
    const renewed = await store.renewMany([stale, ...leases]);
    expect(counted.statements() - s0).toBe(2);
    expect(renewed[0]).toBeNull();
    expect(renewed.slice(1).every((r, i) => r?.resource === leases[i]!.resource)).toBe(true);
    // Listed twice across two statements: the first release lands, the second finds it gone.
    s0 = counted.statements();
    const released = await store.releaseMany([...leases, leases[0]!]);
    expect(counted.statements() - s0).toBe(2);
    expect(released.slice(0, -1).every(Boolean)).toBe(true);
    expect(released.at(-1)).toBe(false);
    expect(await store.get(names.at(-1)!)).toMatchObject({ owner: '' });
    await counted.pool.end();
  });

  it('acquires 1,000 resources in one statement and one round trip, reporting each holder', async () => {
    const counted = countingPool(server.url);
    const store = track(new PostgresStore(counted.pool, { table: freshNamespace() }));
    await store.init();
    const names = Array.from({ length: 1000 }, (_, i) => `rt/${String(i).padStart(4, '0')}`);
    const theirs = (await store.tryAcquire(names[10]!, 'b', 60_000))!;
    await store.release((await store.tryAcquire(names[20]!, 'b', 60_000))!);
    const [s0, r0] = [counted.statements(), counted.roundTrips()];
    const outcomes = await store.acquireMany(names, 'a', 30_000);
    expect([counted.statements() - s0, counted.roundTrips() - r0]).toEqual([1, 1]);
    expect(outcomes.map((o) => o.resource)).toEqual(names);
    expect(outcomes.filter((o) => o.lease)).toHaveLength(999);
    expect(outcomes[10]).toEqual({ resource: names[10], lease: null, holder: pick(theirs) });
    expect(outcomes[20]!.lease).toMatchObject({ owner: 'a', token: 2, ttlMs: 30_000 });
    expect(outcomes[0]!.lease).toMatchObject({ owner: 'a', token: 1, ttlMs: 30_000 });
    // One reading of the server clock for the whole batch.
    expect(new Set(outcomes.map((o) => o.lease?.expiresAt ?? 0)).size).toBe(2);
    await counted.pool.end();
  });

  it('reports the holder that won a row while the batch waited for it, and never waits on a live one', async () => {
    const table = freshNamespace();
    const store = track(await PostgresStore.open(server.url, { table }));
    await store.release((await store.tryAcquire('w/taken', 'b', 60_000))!);
    const live = (await store.tryAcquire('w/live', 'b', 60_000))!;
    const client = await admin.connect();
    let batch: Promise<AcquireOutcome[]> | undefined;
    try {
      await client.query('BEGIN');
      // Taken by c, and a first record made for c, in a transaction the batch has to wait for;
      // a renewal of b's live lease in it too, which the batch must not wait for.
      await client.query(
        `UPDATE "${table}" SET owner = 'c', token = token + 7, expires_at = 99999999999999 WHERE resource = 'w/taken'`,
      );
      await client.query(`INSERT INTO "${table}" VALUES ('w/new', 'c', 1, 99999999999999)`);
      await client.query(
        `UPDATE "${table}" SET expires_at = expires_at + 1 WHERE resource = 'w/live'`,
      );
      batch = store.acquireMany(['w/free', 'w/taken', 'w/new', 'w/live'], 'a', 5000);
      await waitForLockWait();
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const [free, taken, fresh, held] = await batch!;
    expect(free!.lease).toMatchObject({ owner: 'a', token: 1 });
    // The newest version, not the one the statement's snapshot holds (released, token 1).
    expect(taken).toEqual({
      resource: 'w/taken',
      lease: null,
      holder: { resource: 'w/taken', owner: 'c', token: 8, expiresAt: 99999999999999 },
    });
    // A row first inserted after the statement began is refused; its holder cannot be read in
    // the same statement, so it goes unreported rather than guessed.
    expect(fresh).toEqual({ resource: 'w/new', lease: null });
    // Live in the snapshot: refused from it (the renewal was still uncommitted then).
    expect(held).toEqual({ resource: 'w/live', lease: null, holder: pick(live) });
  });

  sqlBatchRaces(() => open());

  it('renewMany and releaseMany of overlapping leases, small and large, in any order never deadlock', async () => {
    const store = await open();
    const names = Array.from({ length: 400 }, (_, i) => `rm/${String(i).padStart(3, '0')}`);
    // Taken one by one in a random order, so the table's physical order is not name order: a
    // large batch is planned as a scan of the table, a small one as probes in another order.
    const leases: Lease[] = [];
    for (const name of shuffled(names, 11))
      leases.push((await store.tryAcquire(name, 'a', 60_000))!);
    for (let round = 0; round < 10; round++) {
      const pairs = Array.from({ length: 8 }, (_, k) =>
        shuffled(leases, round * 100 + k).slice(0, 2),
      );
      const results = await Promise.all([
        store.renewMany(shuffled(leases, round), 60_000),
        ...pairs.map((pair) => store.renewMany(pair, 60_000)),
      ]);
      for (const renewed of results) expect(renewed.filter((lease) => lease === null)).toEqual([]);
    }
    // Racing releases of overlapping leases: each one released exactly once, by one of them.
    const batches = [
      shuffled(leases, 50),
      ...Array.from({ length: 8 }, (_, k) => shuffled(leases, 60 + k).slice(0, 2)),
    ];
    const released = await Promise.all(batches.map((batch) => store.releaseMany(batch)));
    const count = new Map<string, number>();
    released.forEach((results, k) =>
      results.forEach((ok, i) => {
        const resource = batches[k]![i]!.resource;
        if (ok) count.set(resource, (count.get(resource) ?? 0) + 1);
      }),
    );
    expect([...count.values()].filter((n) => n !== 1)).toEqual([]);
    expect(count.size).toBe(names.length);
  });

  it('upgrades a table of schema version 1, keeping its records and tokens', async () => {
    const table = freshNamespace();
    await admin.query(`CREATE TABLE "${table}" (resource text COLLATE "C" PRIMARY KEY,
                         owner text NOT NULL, token bigint NOT NULL, expires_at bigint NOT NULL)`);
    await admin.query(`CREATE TABLE "${table}_meta" (key text PRIMARY KEY, value bigint NOT NULL)`);
    await admin.query(`INSERT INTO "${table}_meta" VALUES ('schema_version', 1)`);
    await admin.query(`INSERT INTO "${table}" VALUES ('kept', '', 41, 0)`);
    const store = track(await PostgresStore.open(server.url, { table }));
    expect(await store.tryAcquire('kept', 'a', 5000)).toMatchObject({ token: 42 });
    const meta = await admin.query(`SELECT value FROM "${table}_meta"`);
    expect(meta.rows).toEqual([{ value: '3' }]);
    const wait = await admin.query(`SELECT count(*)::int AS n FROM "${table}_wait"`);
    expect(wait.rows).toEqual([{ n: 0 }]);
  });

  it('decides expiry on the server clock', async () => {
    const store = await open();
    const serverNow = async (): Promise<number> =>
      Number(
        (await admin.query(`SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS ms`))
          .rows[0].ms,
      );
    const before = await serverNow();
    const lease = (await store.tryAcquire('clock', 'a', 10_000))!;
    const after = await serverNow();
    expect(store.capabilities.clock).toBe('store');
    expect(store.maxClockSkewMs).toBe(0);
    expect(lease.expiresAt).toBeGreaterThanOrEqual(before + 10_000);
    expect(lease.expiresAt).toBeLessThanOrEqual(after + 10_000);
  });

  it('creates the table once when several stores start on it at the same moment', async () => {
    const table = freshNamespace();
    const handles = await Promise.all(
      [1, 2, 3, 4, 5].map(() => openStore(`${server.url}?table=${table}`).then(track)),
    );
    const first = await Promise.all(handles.map((s, i) => s.tryAcquire(`r${i}`, 'a', 5000)));
    expect(first.every((lease) => lease?.token === 1)).toBe(true);
    const meta = await admin.query(`SELECT key, value FROM "${table}_meta"`);
    expect(meta.rows).toEqual([{ key: 'schema_version', value: '3' }]);
    const column = await admin.query(
      `SELECT collation_name FROM information_schema.columns WHERE table_name = $1 AND column_name = 'resource'`,
      [table],
    );
    expect(column.rows).toEqual([{ collation_name: 'C' }]);
  });

  it('scans a prefix range on the primary key', async () => {
    const table = freshNamespace();
    const store = track(await PostgresStore.open(server.url, { table }));
    await store.init();
    const client = await admin.connect();
    try {
      // Rule the alternatives out: if the collation kept the index from serving the range in
      // order, the plan would fall back to a (penalised) scan plus a sort.
      await client.query('SET enable_seqscan = off');
      await client.query('SET enable_bitmapscan = off');
      const plan = await client.query(`EXPLAIN ${statements('public', table, true).listRange}`, [
        'jobs/',
        'jobs0',
        'jobs/5',
        10,
      ]);
      const text = plan.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
      expect(text).toContain(`Index Scan using ${table}_pkey`);
      expect(text).toContain(
        `Index Cond: ((resource >= 'jobs/'::text) AND (resource < 'jobs0'::text) AND (resource > 'jobs/5'::text))`,
      );
      // Each record's lease data is one probe of the data table's key.
      expect(text).toContain(`Index Scan using ${table}_data_pkey`);
      expect(text).not.toContain('Sort');
    } finally {
      client.release();
    }
  });

  it('keeps its table in the schema and under the name the URL gives, creating the schema', async () => {
    const schema = freshNamespace();
    const store = await openStore(`${server.url}?schema=${schema}&table=leases`);
    track(store);
    await store.tryAcquire('s', 'a', 5000);
    const rows = await admin.query(`SELECT resource, owner FROM "${schema}"."leases"`);
    expect(rows.rows).toEqual([{ resource: 's', owner: 'a' }]);
  });

  it('refuses bad URLs and names the problem without the password', async () => {
    const bad = async (url: string): Promise<LeaseError> => {
      const error = await openStore(url).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseError);
      return error as LeaseError;
    };
    const table = await bad(`postgres://u:s3cret@127.0.0.1/db?table=bad-name`);
    expect([table.code, table.message]).toEqual([
      'STORE_URL_INVALID',
      expect.stringContaining('table'),
    ]);
    expect(table.message).not.toContain('s3cret');
    expect(table.message).toContain('***');
    const schema = await bad(`postgres://u@127.0.0.1/db?schema=a;drop`);
    expect([schema.code, schema.message]).toEqual([
      'STORE_URL_INVALID',
      expect.stringContaining('schema'),
    ]);
    const unknown = await bad(`postgresql://u:s3cret@127.0.0.1/db?tabel=x`);
    expect(unknown.code).toBe('STORE_URL_INVALID');
    expect(unknown.message).toContain('tabel');
    expect(unknown.message).not.toContain('s3cret');
    expect((await bad(`postgres:nowhere`)).code).toBe('STORE_URL_INVALID');
    expect((await bad(`postgres://u@h/db?statementTimeoutMs=soon`)).code).toBe('STORE_URL_INVALID');
    expect((await bad(`postgres://u@h/db?notify=maybe`)).code).toBe('STORE_URL_INVALID');
  });

  it('reports a refused connection as STORE_UNAVAILABLE without the password', async () => {
    const port = await freePort();
    const store = track(await openStore(`postgres://u:s3cret@127.0.0.1:${port}/db`));
    const error = (await store.tryAcquire('r', 'a', 5000).catch((e: unknown) => e)) as LeaseError;
    expect(error).toBeInstanceOf(LeaseError);
    expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    expect(error.message).toContain('ECONNREFUSED');
    expect(error.message).not.toContain('s3cret');
  });

  it('uses a pool it is given and leaves it open on close', async () => {
    const pool = new pg.Pool({ connectionString: server.url, max: 2 });
    const store = new PostgresStore(pool, { table: freshNamespace() });
    expect(await store.tryAcquire('p', 'a', 5000)).toMatchObject({ token: 1 });
    await store.close();
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await pool.end();
  });

  it('answers duplicates and forged owners in a batch as one-by-one calls would', async () => {
    const store = await open();
    const a = (await store.tryAcquire('d1', 'a', 1000))!;
    const b = (await store.tryAcquire('d2', 'b', 5000))!;
    const renewed = await store.renewMany([
      a,
      { ...a, owner: 'mallory' },
      { ...a, ttlMs: 9000 },
      b,
      { ...a, token: 7 },
    ]);
    // A lease listed twice is renewed once, with the longest TTL asked for, and both copies are
    // answered with that renewal.
    expect(renewed.map((r) => r && [r.resource, r.ttlMs])).toEqual([
      ['d1', 9000],
      null,
      ['d1', 9000],
      ['d2', 5000],
      null,
    ]);
    // The row keeps the longest TTL asked for, so no holder believes in more than is stored.
    const stored = (await store.get('d1'))!.expiresAt;
    expect(renewed[0]!.expiresAt).toBe(stored);
    expect(renewed[2]!.expiresAt).toBe(stored);
    const released = await store.releaseMany([{ ...b, owner: 'mallory' }, b, b, a]);
    expect(released).toEqual([false, true, false, true]);
    expect(await store.list({ prefix: 'd' })).toEqual([
      { resource: 'd1', owner: '', token: 1, expiresAt: 0 },
      { resource: 'd2', owner: '', token: 1, expiresAt: 0 },
    ]);
  });

  it('refuses a token beyond 2^53 − 1 instead of rounding it', async () => {
    const table = freshNamespace();
    const store = track(await PostgresStore.open(server.url, { table }));
    const lease = (await store.tryAcquire('big', 'a', 5000))!;
    await store.release(lease);
    await admin.query(`UPDATE "${table}" SET token = $1`, [String(2 ** 53 - 2)]);
    const top = (await store.tryAcquire('big', 'a', 5000))!;
    expect(top.token).toBe(Number.MAX_SAFE_INTEGER);
    await store.release(top);
    const error = (await store.tryAcquire('big', 'b', 5000).catch((e: unknown) => e)) as LeaseError;
    expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', false]);
    expect(error.message).toContain('9007199254740992');
  });

  it('refuses a table written by a newer leasehold', async () => {
    const table = freshNamespace();
    const store = track(await PostgresStore.open(server.url, { table }));
    await store.init();
    await admin.query(`UPDATE "${table}_meta" SET value = 99`);
    const newcomer = track(await PostgresStore.open(server.url, { table }));
    const error = (await newcomer.get('x').catch((e: unknown) => e)) as LeaseError;
    expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', false]);
    expect(error.message).toContain('upgrade leasehold');
  });

  it('without notify or prepared statements, releases work and watch says what to do instead', async () => {
    const store = await open('&notify=false&prepare=false');
    expect(store.capabilities.watch).toBe(false);
    const lease = (await store.tryAcquire('n', 'a', 5000))!;
    expect(await store.release(lease)).toBe(true);
    expect(await store.releaseMany([lease])).toEqual([false]);
    const error = (() => {
      try {
        store.watch!('', () => {});
      } catch (e) {
        return e as LeaseError;
      }
    })();
    expect(error?.code).toBe('NOT_SUPPORTED');
    expect(error?.message).toContain('list()');
  });
});

function pick({ resource, owner, token, expiresAt }: Lease) {
  return { resource, owner, token, expiresAt };
}
