import mysql from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { openStore, type LeaseStore } from '../../src/index.js';
import { MysqlStore } from '../../src/stores/mysql/index.js';
import { freshNamespace } from '../conformance/factory.js';
import {
  MARIADB_DATABASE,
  mariadbUnavailable,
  startMariadb,
  type MariadbServer,
} from '../harness/mariadb-server.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';

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
    expect(store.capabilities).toEqual({ clock: 'store', batch: true, watch: false });
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
    // A lease listed twice is renewed once, with the TTL of its last occurrence.
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

  it('creates its table once under concurrent first use and records the schema version', async () => {
    const table = freshNamespace();
    const url = server.url({ table });
    const stores = await Promise.all([1, 2, 3, 4, 5].map(() => open(url)));
    const results = await Promise.all(stores.map((s, i) => s.tryAcquire('one', `w${i}`, 5000)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const [rows] = await admin.query(`SELECT name, value FROM ${table}_meta`);
    expect(rows).toEqual([{ name: 'schema_version', value: 1 }]);
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
