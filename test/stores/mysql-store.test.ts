import mysql from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import {
  LIMITS,
  openStore,
  type AcquireOutcome,
  type Lease,
  type LeaseStore,
} from '../../src/index.js';
import { MysqlStore } from '../../src/stores/mysql/index.js';
import { BATCH_ROWS } from '../../src/stores/mysql/mysql-store.js';
import { freshNamespace } from '../conformance/factory.js';
import {
  MARIADB_DATABASE,
  mariadbUnavailable,
  startMariadb,
  type MariadbServer,
} from '../harness/mariadb-server.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { recordCommands, statementCounters } from '../harness/mysql-commands.js';
import { sqlBatchRaces } from './sql-batch-races.js';

const unavailable = mariadbUnavailable();

describeServer('MySQL store (MariaDB)', unavailable, () => {
  let server: MariadbServer;
  let admin: mysql.Pool;
  const cleanup: (() => Promise<unknown>)[] = [];
  const pool = (options: mysql.PoolOptions = {}): mysql.Pool => {
    const created = mysql.createPool({
      host: '127.0.0.1',
      port: server.port,
      user: 'root',
      database: MARIADB_DATABASE,
      ...options,
    });
    cleanup.push(() => created.end());
    return created;
  };
  const open = async (url = server.url({ table: freshNamespace() })): Promise<LeaseStore> => {
    const store = await openStore(url);
    cleanup.unshift(() => store.close());
    return store;
  };
  /** The server's clock, as the store reads it. */
  const serverNow = async (): Promise<number> => {
    const [rows] = await admin.query(
      `SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000 AS ms`,
    );
    return Number((rows as { ms: number }[])[0]!.ms);
  };

  /**
   * Resolves once `n` transactions wait for a row lock. InnoDB refreshes INNODB_TRX only after
   * nobody read it for 100 ms, so this polls slower than that.
   */
  const waitForLockWait = async (n: number): Promise<void> => {
    for (let i = 0; i < 60; i++) {
      const [rows] = await admin.query(
        `SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`,
      );
      if (Number((rows as { n: number }[])[0]!.n) >= n) return;
      await new Promise((r) => setTimeout(r, 150));
    }
    throw new Error(`fewer than ${n} transactions started waiting for a lock`);
  };

  /** A pool that records every command the driver puts on the wire (see `recordCommands`). */
  const countingPool = (options: mysql.PoolOptions = {}): { pool: mysql.Pool; sent: string[] } => {
    const counted = pool({ multipleStatements: true, ...options });
    return { pool: counted, sent: recordCommands(counted) };
  };
  /** The server's global status counters (statements it ran by kind, and the like). */
  const status = (): Promise<Record<string, number>> => statementCounters(admin);

  beforeAll(async () => {
    server = await startMariadb();
    admin = mysql.createPool({ uri: server.url(), multipleStatements: true });
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0)) await step().catch(() => {});
  });
  afterAll(async () => {
    await admin?.end();
    await server?.dispose();
  });

  it('reads mysql:// and mariadb:// URLs and rejects bad ones naming the problem', async () => {
    const store = await open(server.url({ table: 'custom_tbl', queryTimeoutMs: 2000 }));
    await store.tryAcquire('r', 'a', 5000);
    const [rows] = await admin.query('SELECT COUNT(*) AS n FROM custom_tbl');
    expect((rows as { n: number }[])[0]!.n).toBe(1);
    const maria = await open(server.url({ table: 'custom_tbl' }).replace(/^mysql:/, 'mariadb:'));
    expect(await maria.get('r')).toMatchObject({ owner: 'a', token: 1 });

    const base = `mysql://root@127.0.0.1:${server.port}`;
    for (const [url, needle] of [
      [`${base}/${MARIADB_DATABASE}?tabel=x`, 'tabel'],
      [`${base}/${MARIADB_DATABASE}?table=bad-name`, 'table'],
      [`${base}/${MARIADB_DATABASE}?table=${'t'.repeat(60)}`, 'table'],
      [`${base}/${MARIADB_DATABASE}?queryTimeoutMs=soon`, 'queryTimeoutMs'],
      [`${base}/`, 'database'],
      [`${base}/db;drop`, 'database'],
      [`mysql:${MARIADB_DATABASE}`, 'mysql://'],
    ]) {
      const error = await rejection(openStore(url));
      expect(error.code, url).toBe('STORE_URL_INVALID');
      expect(error.message, url).toContain(needle);
    }
  });

  it('never shows a password in errors', async () => {
    await admin.query(`CREATE USER 'lh'@'%' IDENTIFIED BY 'right-Secret-1'`);
    await admin.query(`GRANT ALL ON ${MARIADB_DATABASE}.* TO 'lh'@'%'`);
    const url = (password: string): string =>
      `mysql://lh:${encodeURIComponent(password)}@127.0.0.1:${server.port}/${MARIADB_DATABASE}?table=${freshNamespace()}`;

    const store = await open(url('right-Secret-1'));
    expect(await store.tryAcquire('r', 'a', 5000)).not.toBeNull();

    const error = await rejection(openStore(url('wrong-Secret-2')));
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.retryable).toBe(false);
    const shown = `${error.message} ${String(error.cause)} ${JSON.stringify(error.cause)}`;
    expect(shown).toContain('Access denied');
    expect(shown).not.toContain('wrong-Secret-2');
    const bad = await rejection(openStore(`mysql://lh:wrong-Secret-2@127.0.0.1:${server.port}/`));
    expect(bad.message).not.toContain('wrong-Secret-2');
  });

  it('decides expiry on the server clock and reports expiresAt as stored', async () => {
    const store = await open();
    const before = await serverNow();
    const lease = (await store.tryAcquire('clock', 'a', 10_000))!;
    const after = await serverNow();
    expect(lease.expiresAt - 10_000).toBeGreaterThanOrEqual(before);
    expect(lease.expiresAt - 10_000).toBeLessThanOrEqual(after);
    expect(store.capabilities).toEqual({
      clock: 'store',
      batch: true,
      watch: false,
      atomicGroupMax: LIMITS.groupMaxSize,
      data: true,
    });
    expect(store.maxClockSkewMs).toBe(0);

    const [renewed] = await store.renewMany([lease], 20_000);
    expect((await store.get('clock'))!.expiresAt).toBe(renewed!.expiresAt);
    expect(renewed!.expiresAt - 20_000).toBeGreaterThanOrEqual(after);
  });

  it('uses a caller pool without ending it, whatever its FOUND_ROWS flag and sql_mode', async () => {
    const table = freshNamespace();
    // Without CLIENT_FOUND_ROWS an UPDATE that changes nothing reports 0 affected rows; with
    // NO_BACKSLASH_ESCAPES a client-side escaped \' would end the string literal. A frozen
    // session clock makes a second renewal write the very same expires_at.
    const callerPool = pool({ multipleStatements: true, flags: ['-FOUND_ROWS'] });
    callerPool.pool.on('connection', (c) => {
      c.query(
        `SET SESSION sql_mode = 'ANSI,NO_BACKSLASH_ESCAPES,STRICT_ALL_TABLES', SESSION timestamp = 1700000000.25`,
      );
    });
    const store = new MysqlStore(callerPool, { table });
    const names = ["it's", 'back\\slash\\', '"quoted"', '🚀\u{10FFFF}'];
    const leases = [];
    for (const name of names) leases.push((await store.tryAcquire(name, `o\\'${name}`, 5000))!);
    expect(leases.map((l) => [l.token, l.expiresAt])).toEqual(names.map(() => [1, 1700000005250]));
    expect(await store.tryAcquire("it's", 'other', 5000)).toBeNull();

    const first = await store.renew(leases[0]!);
    const again = await store.renew(leases[0]!);
    expect(again).toEqual(first);
    const [unchanged] = await callerPool.query(`UPDATE ${table} SET token = token`);
    expect((unchanged as { affectedRows: number }).affectedRows).toBe(0); // FOUND_ROWS is off

    const renewed = await store.renewMany(leases, 7000);
    expect(renewed.map((r) => r?.resource)).toEqual(names);
    expect((await store.list()).map((r) => r.owner).sort()).toEqual(
      names.map((n) => `o\\'${n}`).sort(),
    );
    expect(await store.releaseMany([...leases, leases[0]!])).toEqual([
      true,
      true,
      true,
      true,
      false,
    ]);
    await store.close();
    const [rows] = await callerPool.query(`SELECT COUNT(*) AS n FROM ${table}`);
    expect((rows as { n: number }[])[0]!.n).toBe(4);
  });

  it('refuses a caller pool without multipleStatements, saying what to change', async () => {
    const store = new MysqlStore(pool(), { table: freshNamespace() });
    const error = await rejection(store.tryAcquire('r', 'a', 5000));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain('multipleStatements: true');
  });

  it('batches answer per lease: duplicates, stale tokens and another owner of the same resource', async () => {
    const store = await open();
    const a = (await store.tryAcquire('x', 'a', 5000))!;
    const y = (await store.tryAcquire('y', 'b', 5000))!;
    const stale = { ...a, token: a.token + 1 };
    const forged = { ...y, owner: 'a' };
    const renewed = await store.renewMany([a, stale, a, forged, { ...a, ttlMs: 9000 }]);
    expect(renewed.map((r) => r !== null)).toEqual([true, false, true, false, true]);
    // A lease listed twice is renewed once, with the longest TTL asked for.
    const stored = (await store.get('x'))!.expiresAt;
    expect(renewed.filter(Boolean).map((r) => [r!.expiresAt, r!.ttlMs])).toEqual([
      [stored, 9000],
      [stored, 9000],
      [stored, 9000],
    ]);
    expect(await store.releaseMany([stale, a, forged, a, y])).toEqual([
      false,
      true,
      false,
      false,
      true,
    ]);
    expect(await store.get('x')).toMatchObject({ owner: '', token: 1, expiresAt: 0 });
  });

  it('does every transition in one prepared statement and one round trip, batches of 1,000 in one round trip', async () => {
    // One connection, so every statement is prepared on it before the counting starts.
    const { pool: counted, sent } = countingPool({ connectionLimit: 1 });
    const store = new MysqlStore(counted, { table: freshNamespace() });
    cleanup.unshift(() => store.close());
    const warm = (await store.tryAcquire('warm', 'a', 5000))!;
    await store.tryAcquire('warm', 'b', 5000);
    await store.release((await store.renew(warm))!);
    const names = Array.from({ length: 1000 }, (_, i) => `rt/${String(i).padStart(4, '0')}`);
    const many = (await store.acquireMany(names, 'a', 30_000)).map((o) => o.lease!);
    const measured: Record<string, unknown> = {};
    const measure = async <T>(name: string, call: () => Promise<T>): Promise<T> => {
      sent.length = 0;
      const before = await status();
      const result = await call();
      const after = await status();
      // The status query itself is one Question.
      const delta = (key: string): number =>
        after[key]! - before[key]! - (key === 'Questions' ? 1 : 0);
      measured[name] = {
        commands: [...sent],
        statements: delta('Questions'),
        transactions: delta('Com_commit'),
      };
      return result;
    };
    const lease = (await measure('tryAcquire', () => store.tryAcquire('one', 'a', 5000)))!;
    expect(await measure('tryAcquire (held)', () => store.tryAcquire('one', 'b', 5000))).toBeNull();
    const renewed = (await measure('renew', () => store.renew(lease)))!;
    expect(await measure('release', () => store.release(renewed))).toBe(true);
    const taken = (await store.tryAcquire('one', 'b', 5000))!;
    expect(
      await measure('tryAcquire (taken over)', () => store.tryAcquire('one', 'c', 5000)),
    ).toBeNull();
    await store.release(taken);
    expect(
      await measure('tryAcquire (released)', () => store.tryAcquire('one', 'c', 5000)),
    ).toMatchObject({ token: 3 });
    expect((await measure('renewMany(1000)', () => store.renewMany(many))).every(Boolean)).toBe(
      true,
    );
    expect(await measure('releaseMany(1000)', () => store.releaseMany(many))).toEqual(
      many.map(() => true),
    );
    console.log('per operation:', measured);
    const one = { commands: ['Execute'], statements: 1, transactions: 0 };
    for (const name of [
      'tryAcquire',
      'tryAcquire (held)',
      'renew',
      'release',
      'tryAcquire (taken over)',
      'tryAcquire (released)',
    ])
      expect([name, measured[name]]).toEqual([name, one]);
    // A batch: one round trip and one transaction.
    for (const name of ['renewMany(1000)', 'releaseMany(1000)'])
      expect([name, measured[name]]).toMatchObject([
        name,
        { commands: ['Query'], transactions: 1 },
      ]);
  });

  it('answers an acquire exactly whatever the server clock, reading the expiry back only when its estimate was off', async () => {
    const { pool: counted, sent } = countingPool({ connectionLimit: 1 });
    const day = 86_400;
    const frozen = Math.floor(Date.now() / 1000) - day;
    counted.pool.on('connection', (c) => {
      c.query(`SET SESSION timestamp = ${frozen}.5`);
    });
    const table = freshNamespace();
    const store = new MysqlStore(counted, { table });
    cleanup.unshift(() => store.close());
    await store.init();
    const stored = async (resource: string): Promise<number> => {
      const [rows] = await admin.query(`SELECT expires_at FROM ${table} WHERE resource = ?`, [
        resource,
      ]);
      return Number((rows as { expires_at: number }[])[0]!.expires_at);
    };
    const take = async (resource: string): Promise<{ lease: Lease; commands: string[] }> => {
      sent.length = 0;
      const lease = (await store.tryAcquire(resource, 'a', 5000))!;
      expect(lease.expiresAt).toBe(await stored(resource));
      // Round trips of the call, less the one-time prepares of a statement's first use.
      return { lease, commands: sent.filter((c) => c !== 'Prepare') };
    };
    // A day off: the answer cannot carry the clock, so the expiry is read back once…
    const first = await take('r1');
    expect(first.lease.expiresAt).toBe(frozen * 1000 + 500 + 5000);
    expect(first.commands).toEqual(['Execute', 'Execute']);
    // …and the estimate is right from then on.
    expect((await take('r2')).commands).toEqual(['Execute']);
    // The server clock steps 10 s ahead on this connection: once more, then in step again.
    await counted.query(`SET SESSION timestamp = ${frozen + 10}.5`);
    const stepped = await take('r3');
    expect(stepped.commands).toEqual(['Execute', 'Execute']);
    expect(stepped.lease.expiresAt).toBe((frozen + 10) * 1000 + 500 + 5000);
    expect((await take('r4')).commands).toEqual(['Execute']);
    // A takeover answers the same way, with the next token.
    await store.release(stepped.lease);
    expect((await take('r3')).lease).toMatchObject({
      token: 2,
      expiresAt: (frozen + 10) * 1000 + 5500,
    });
  });

  it('keeps its clock estimate with many acquires in flight, each exact', async () => {
    const { pool: counted, sent } = countingPool({ connectionLimit: 10 });
    const table = freshNamespace();
    const store = new MysqlStore(counted, { table });
    cleanup.unshift(() => store.close());
    await store.init();
    const workers = 32;
    const cycles = 20;
    const expiries = new Map<string, number>();
    await Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        for (let i = 0; i < cycles; i++) {
          const lease = (await store.tryAcquire(`c/${w}`, `w${w}`, 60_000))!;
          expect(lease.token).toBe(i + 1);
          if (i < cycles - 1) expect(await store.release(lease)).toBe(true);
          else expiries.set(lease.resource, lease.expiresAt);
        }
      }),
    );
    const [rows] = await admin.query(`SELECT resource, expires_at FROM ${table}`);
    const stored = new Map(
      (rows as { resource: Buffer; expires_at: number }[]).map((r) => [
        r.resource.toString(),
        Number(r.expires_at),
      ]),
    );
    expect(stored).toEqual(expiries);
    // Each cycle is an acquire and a release; an acquire whose answer could not carry the clock
    // reads the expiry back. Corrections from calls in flight together must not pile up (that
    // diverges): nearly every acquire answers in one round trip.
    const fallbacks = sent.filter((c) => c === 'Execute').length - workers * (2 * cycles - 1);
    expect(fallbacks).toBeLessThan((workers * cycles) / 2);
  });

  it('grants tokens up to 2^53 − 1 exactly and refuses to go past it, leaving the record', async () => {
    const table = freshNamespace();
    const store = await open(server.url({ table }));
    await store.release((await store.tryAcquire('big', 'a', 5000))!);
    await admin.query(`UPDATE ${table} SET token = ?`, [String(2 ** 53 - 2)]);
    const top = (await store.tryAcquire('big', 'a', 5000))!;
    expect(top.token).toBe(Number.MAX_SAFE_INTEGER);
    expect(await store.get('big')).toMatchObject({ token: Number.MAX_SAFE_INTEGER });
    await store.release(top);
    const error = await rejection(store.tryAcquire('big', 'b', 5000));
    expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', false]);
    expect(await store.get('big')).toEqual({
      resource: 'big',
      owner: '',
      token: Number.MAX_SAFE_INTEGER,
      expiresAt: 0,
    });
  });

  it('renews and releases more than BATCH_ROWS leases as consecutive batches, each answered', async () => {
    const { pool: counted, sent } = countingPool({ connectionLimit: 2 });
    const store = new MysqlStore(counted, { table: freshNamespace() });
    cleanup.unshift(() => store.close());
    const names = Array.from({ length: BATCH_ROWS + 5 }, (_, i) => `big/${i}`);
    const leases: Lease[] = [];
    for (let i = 0; i < names.length; i += 10_000)
      for (const o of await store.acquireMany(names.slice(i, i + 10_000), 'a', 30_000))
        leases.push(o.lease!);
    // The last lease also appears first, with a stale token: refused, the rest answered.
    const stale = { ...leases.at(-1)!, token: leases.at(-1)!.token + 1 };
    sent.length = 0;
    const renewed = await store.renewMany([stale, ...leases]);
    expect(renewed[0]).toBeNull();
    expect(renewed.slice(1).every((r, i) => r?.resource === leases[i]!.resource)).toBe(true);
    expect(sent.filter((c) => c === 'Query')).toHaveLength(2);
    sent.length = 0;
    expect((await store.releaseMany(leases)).every(Boolean)).toBe(true);
    expect(sent.filter((c) => c === 'Query')).toHaveLength(2);
    expect(await store.get(names.at(-1)!)).toMatchObject({ owner: '' });
  });

  it('acquires 1,000 resources in one round trip, reporting each holder', async () => {
    const { pool: counted, sent } = countingPool();
    const store = new MysqlStore(counted, { table: freshNamespace() });
    cleanup.unshift(() => store.close());
    await store.init();
    const names = Array.from({ length: 1000 }, (_, i) => `rt/${String(i).padStart(4, '0')}`);
    const theirs = (await store.tryAcquire(names[10]!, 'b', 60_000))!;
    await store.release((await store.tryAcquire(names[20]!, 'b', 60_000))!);
    sent.length = 0;
    const before = await serverNow();
    const outcomes = await store.acquireMany(names, 'a', 30_000);
    const after = await serverNow();
    expect(sent).toEqual(['Query']);
    expect(outcomes.map((o) => o.resource)).toEqual(names);
    expect(outcomes.filter((o) => o.lease)).toHaveLength(999);
    expect(outcomes[10]).toEqual({
      resource: names[10],
      lease: null,
      holder: { resource: names[10], owner: 'b', token: 1, expiresAt: theirs.expiresAt },
    });
    expect(outcomes[20]!.lease).toMatchObject({ owner: 'a', token: 2, ttlMs: 30_000 });
    expect(outcomes[0]!.lease).toMatchObject({ owner: 'a', token: 1, ttlMs: 30_000 });
    // One reading of the server clock for the whole batch, and what was stored is what was said.
    const expiresAt = outcomes[0]!.lease!.expiresAt;
    expect(expiresAt - 30_000).toBeGreaterThanOrEqual(before);
    expect(expiresAt - 30_000).toBeLessThanOrEqual(after);
    expect(outcomes.filter((o) => o.lease && o.lease.expiresAt !== expiresAt)).toEqual([]);
    const stored = await store.list({ prefix: 'rt/', limit: 2000 });
    expect(stored.filter((r) => r.owner === 'a' && r.expiresAt === expiresAt)).toHaveLength(999);
  });

  it('shows nobody a grant before its batch commits, and reports the holder it waited for', async () => {
    const table = freshNamespace();
    const store = await open(server.url({ table }));
    const other = await open(server.url({ table }));
    await store.release((await store.tryAcquire('w/050', 'b', 60_000))!);
    const names = Array.from({ length: 1000 }, (_, i) => `w/${String(i).padStart(3, '0')}`);
    const blocker = await admin.getConnection();
    let batch: Promise<AcquireOutcome[]> | undefined;
    let single: Promise<unknown> | undefined;
    try {
      await blocker.query('START TRANSACTION');
      await blocker.query(
        `INSERT INTO ${table} (resource, owner, token, expires_at) VALUES ('w/500', 'c', 1, 99999999999999)`,
      );
      // Names go in byte order: w/000 … w/499 are taken (uncommitted) when w/500 makes it wait.
      batch = store.acquireMany([...names].reverse(), 'a', 60_000);
      await waitForLockWait(1);
      expect(await other.get('w/100')).toBeNull();
      expect(await other.get('w/050')).toEqual({
        resource: 'w/050',
        owner: '',
        token: 1,
        expiresAt: 0,
      });
      expect(await other.list({ prefix: 'w/' })).toHaveLength(1);
      single = other.tryAcquire('w/100', 'd', 60_000);
      await waitForLockWait(2);
      await blocker.query('COMMIT');
    } finally {
      await blocker.query('ROLLBACK'); // after a failure: let the waiting calls finish
      blocker.release();
    }
    const outcomes = (await batch!).reverse();
    expect(await single).toBeNull();
    expect(outcomes[500]).toEqual({
      resource: 'w/500',
      lease: null,
      holder: { resource: 'w/500', owner: 'c', token: 1, expiresAt: 99999999999999 },
    });
    expect(outcomes.filter((o) => o.lease)).toHaveLength(999);
    expect(outcomes[50]!.lease).toMatchObject({ owner: 'a', token: 2 });
    const listed = await other.list({ prefix: 'w/', limit: 2000 });
    expect(listed.filter((r) => r.owner === 'a' && r.expiresAt > 0)).toHaveLength(999);
  });

  sqlBatchRaces(() => open());

  it('creates its table once under concurrent first use and records the schema version', async () => {
    const table = freshNamespace();
    const url = server.url({ table });
    const stores = await Promise.all([1, 2, 3, 4, 5].map(() => open(url)));
    const results = await Promise.all(stores.map((s, i) => s.tryAcquire('one', `w${i}`, 5000)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const [rows] = await admin.query(`SELECT name, value FROM ${table}_meta`);
    expect(rows).toEqual([{ name: 'schema_version', value: 2 }]);
  });

  it('refuses a table whose schema is newer than it understands', async () => {
    const table = freshNamespace();
    await (await open(server.url({ table }))).get('r');
    await admin.query(`UPDATE ${table}_meta SET value = 99`);
    const error = await rejection(openStore(server.url({ table })));
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('schema version 99');
  });
});
