import mysql from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { LIMITS, openStore, type Lease, type LeaseData, type LeaseStore } from '../../src/index.js';
import { MysqlStore } from '../../src/stores/mysql/index.js';
import type { MysqlConnection, MysqlPool } from '../../src/stores/mysql/mysql-driver.js';
import type { MysqlStoreOptions } from '../../src/stores/mysql/mysql-options.js';
import { freshNamespace } from '../conformance/factory.js';
import { describeServer } from '../harness/describe-server.js';
import { sleep } from '../harness/expect-error.js';
import {
  MARIADB_DATABASE,
  mariadbUnavailable,
  startMariadb,
  type MariadbServer,
} from '../harness/mariadb-server.js';
import { statementCounters } from '../harness/mysql-commands.js';

const unavailable = mariadbUnavailable();

const COMMANDS: Record<number, string> = { 0x03: 'Query', 0x16: 'Prepare', 0x17: 'Execute' };

/** What the driver put on the wire and got back, from connections opened after `record`. */
interface Wire {
  /** One entry per command (a round trip): its kind, and its SQL text for a query or prepare. */
  readonly sent: { command: string; sql: string }[];
  /** Bytes the client wrote and read. */
  bytes: { out: number; in: number };
}

function record(pool: mysql.Pool): Wire {
  const wire: Wire = { sent: [], bytes: { out: 0, in: 0 } };
  pool.pool.on('connection', (connection) => {
    const core = connection as unknown as {
      writePacket(packet: { buffer: Buffer }): unknown;
      stream: NodeJS.ReadableStream;
    };
    const write = core.writePacket.bind(core);
    core.writePacket = (packet) => {
      const command = COMMANDS[packet.buffer[4]!] ?? `command 0x${packet.buffer[4]!.toString(16)}`;
      const sql = command === 'Execute' ? '' : packet.buffer.subarray(5).toString('utf8');
      wire.sent.push({ command, sql });
      wire.bytes.out += packet.buffer.length;
      return write(packet);
    };
    core.stream.on('data', (chunk: Buffer) => {
      wire.bytes.in += chunk.length;
    });
  });
  return wire;
}

/** A string of exactly `n` UTF-8 bytes of `char` (2, 3 or 4 bytes each) and ASCII. */
const utf8Of = (n: number, char = '€'): string => {
  const size = Buffer.byteLength(char);
  return char.repeat(Math.floor(n / size)) + 'x'.repeat(n % size);
};

/** The version-1 table and meta table, as the release before lease data created them. */
const OLD_DDL = (table: string): string => `
  CREATE TABLE \`${table}\` (
    resource   VARBINARY(512) NOT NULL,
    owner      VARBINARY(256) NOT NULL,
    token      BIGINT         NOT NULL,
    expires_at BIGINT         NOT NULL,
    PRIMARY KEY (resource)
  ) ENGINE=InnoDB;
  CREATE TABLE \`${table}_meta\` (
    name  VARCHAR(64) NOT NULL PRIMARY KEY,
    value BIGINT      NOT NULL
  ) ENGINE=InnoDB;
  INSERT INTO \`${table}_meta\` VALUES ('schema_version', 1)`;

describeServer('MySQL store: lease data (MariaDB)', unavailable, () => {
  let server: MariadbServer;
  let admin: mysql.Pool;
  const cleanup: (() => Promise<unknown>)[] = [];
  const pool = (options: mysql.PoolOptions = {}): mysql.Pool => {
    const created = mysql.createPool({
      host: '127.0.0.1',
      port: server.port,
      user: 'root',
      database: MARIADB_DATABASE,
      multipleStatements: true,
      ...options,
    });
    cleanup.push(() => created.end());
    return created;
  };
  const open = async (table = freshNamespace()): Promise<LeaseStore> => {
    const store = await openStore(server.url({ table }));
    cleanup.unshift(() => store.close());
    return store;
  };
  /** A store on one recorded connection, every statement it uses already prepared on it. */
  const recorded = async (
    wrap: (p: mysql.Pool) => MysqlPool = (p) => p,
    options: MysqlStoreOptions = {},
  ): Promise<{ store: MysqlStore; wire: Wire; table: string }> => {
    const p = pool({ connectionLimit: 1 });
    const wire = record(p);
    const table = freshNamespace();
    const store = new MysqlStore(wrap(p), { table, ...options });
    cleanup.unshift(() => store.close());
    const warm = (await store.tryAcquire('warm', 'a', 60_000))!;
    await store.tryAcquire('warm', 'b', 60_000);
    await store.writeData(warm, 'w');
    const renewed = (await store.renew(warm, undefined, 'w'))!;
    await store.renew(renewed);
    await store.release(renewed, 'w');
    await store.release((await store.tryAcquire('warm', 'a', 60_000))!);
    return { store, wire, table };
  };
  /** Round trips and statements of one call, on the server's counters and on the wire. */
  const measure = async <T>(
    wire: Wire,
    call: () => Promise<T>,
  ): Promise<{ result: T; commands: string[]; statements: number }> => {
    wire.sent.length = 0;
    const before = await statementCounters(admin);
    const result = await call();
    const after = await statementCounters(admin);
    // The counters' own query is one Question.
    const statements = after.Questions! - before.Questions! - 1;
    return { result, commands: wire.sent.map((s) => s.command), statements };
  };
  /** The server's clock, as the store reads it. */
  const serverNow = async (): Promise<number> => {
    const [rows] = await admin.query(
      `SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000 AS ms`,
    );
    return Number((rows as { ms: number }[])[0]!.ms);
  };
  const rawData = async (table: string, resource: string): Promise<Buffer | null> => {
    const [rows] = await admin.query(`SELECT data FROM \`${table}\` WHERE resource = ?`, [
      resource,
    ]);
    return (rows as { data: Buffer | null }[])[0]!.data;
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

  it('writes data, renews and releases with it in one prepared statement and one round trip each', async () => {
    const { store, wire, table } = await recorded();
    const lease = (await store.tryAcquire('rt', 'a', 60_000))!;
    const one = { commands: ['Execute'], statements: 1 };

    const write = await measure(wire, () => store.writeData(lease, 'v1'));
    expect([write.result, write.commands, write.statements]).toEqual([true, ...Object.values(one)]);
    // The value already stored, written again, still counts (CLIENT_FOUND_ROWS or not).
    expect((await measure(wire, () => store.writeData(lease, 'v1'))).result).toBe(true);
    const renew = await measure(wire, () => store.renew(lease, 30_000, 'v2'));
    expect(renew.result).toMatchObject({ token: lease.token, ttlMs: 30_000, data: 'v2' });
    expect([renew.commands, renew.statements]).toEqual(Object.values(one));
    expect((await store.get('rt'))!.expiresAt).toBe(renew.result!.expiresAt);
    const release = await measure(wire, () => store.release(renew.result!, 'v3'));
    expect([release.result, release.commands, release.statements]).toEqual([
      true,
      ...Object.values(one),
    ]);
    expect(await store.get('rt')).toEqual({
      resource: 'rt',
      owner: '',
      token: lease.token,
      expiresAt: 0,
      data: 'v3',
    });
    expect((await rawData(table, 'rt'))!.toString()).toBe('sv3');
    // Refusals: one round trip, nothing written.
    for (const call of [
      (): Promise<unknown> => store.writeData(lease, 'late'),
      () => store.renew(lease, undefined, 'late'),
      () => store.release(lease, 'late'),
    ]) {
      const refused = await measure(wire, call);
      expect([refused.result ?? false, refused.commands]).toEqual([false, ['Execute']]);
    }
    expect((await store.get('rt'))!.data).toBe('v3');
  });

  it('hands the data to the next holder after release and after expiry, in the grant’s one round trip', async () => {
    const { store, wire } = await recorded();
    const first = (await store.tryAcquire('g', 'a', 60_000))!;
    await store.release(first, 'after release');
    const afterRelease = await measure(wire, () => store.tryAcquire('g', 'b', 200));
    expect(afterRelease.result).toMatchObject({ owner: 'b', data: 'after release' });
    expect([afterRelease.commands, afterRelease.statements]).toEqual([['Execute'], 1]);
    await store.writeData(afterRelease.result!, new Uint8Array([0, 1, 255]));
    await sleep(400);
    const afterExpiry = await measure(wire, () => store.tryAcquire('g', 'c', 60_000));
    expect(afterExpiry.result!.token).toBeGreaterThan(afterRelease.result!.token);
    expect(afterExpiry.result!.data).toEqual(new Uint8Array([0, 1, 255]));
    expect(afterExpiry.result!.data).toBeInstanceOf(Uint8Array);
    expect([afterExpiry.commands, afterExpiry.statements]).toEqual([['Execute'], 1]);
    // A refusal answers in one round trip too, and ships none of the holder's 4 KiB.
    expect(await store.writeData(afterExpiry.result!, utf8Of(LIMITS.dataMaxBytes))).toBe(true);
    const bytesBefore = wire.bytes.in;
    const refused = await measure(wire, () => store.tryAcquire('g', 'd', 60_000));
    expect([refused.result, refused.commands]).toEqual([null, ['Execute']]);
    expect(wire.bytes.in - bytesBefore).toBeLessThan(500);

    // The batch and group grants: one round trip each, the data in the answer.
    await store.release(afterExpiry.result!, 'for the group');
    const many = await measure(wire, () => store.acquireMany(['g', 'g2'], 'e', 60_000));
    expect(many.result.map((o) => o.lease?.data ?? null)).toEqual(['for the group', null]);
    expect(many.commands).toEqual(['Query']);
    await store.releaseMany(many.result.map((o) => o.lease!));
    const all = await measure(wire, () => store.acquireAll(['g2', 'g'], 'f', 60_000));
    expect(all.result!.map((l) => l.data ?? null)).toEqual([null, 'for the group']);
    expect(all.commands).toEqual(['Query']);
    await store.releaseMany(all.result!);
    for (const candidates of [['g'], ['g2', 'g']]) {
      const taken = (await store.tryAcquire('g2', 'x', 60_000))!;
      if (candidates.length === 1) await store.release(taken);
      const picked = await measure(wire, () => store.acquireFirst(candidates, 'h', 60_000));
      expect(picked.result).toMatchObject({ resource: 'g', data: 'for the group' });
      expect(picked.commands).toEqual(['Query']);
      await store.release(picked.result!);
      if (candidates.length > 1) await store.release(taken);
    }
    // A refusal of acquireMany reports the holder without its data.
    const held = (await store.tryAcquire('g', 'y', 60_000))!;
    const [outcome] = await store.acquireMany(['g'], 'z', 60_000);
    expect(outcome!.holder).toEqual({
      resource: 'g',
      owner: 'y',
      token: held.token,
      expiresAt: held.expiresAt,
    });
  });

  it('renews and releases 10,000 leases with 4 KiB data at the cost of leases without data, never rewriting it', async () => {
    const names = Array.from({ length: 10_000 }, (_, i) => `n/${String(i).padStart(5, '0')}`);
    const limit = utf8Of(LIMITS.dataMaxBytes);
    const run = async (withData: boolean) => {
      // A long deadline: this counts bytes, and 40 MB of rows on a loaded test server are slow.
      const { store, wire, table } = await recorded(undefined, { queryTimeoutMs: 60_000 });
      const leases = (await store.acquireMany(names, 'a', 60_000)).map((o) => o.lease!);
      if (withData)
        await admin.query(`UPDATE \`${table}\` SET data = ? WHERE resource LIKE 'n/%'`, [
          Buffer.from(`s${limit}`),
        ]);
      wire.sent.length = 0;
      wire.bytes = { out: 0, in: 0 };
      const started = performance.now();
      const renewed = await store.renewMany(leases, 30_000);
      console.log(
        `renewMany(10,000), data ${withData}: ${Math.round(performance.now() - started)} ms`,
      );
      expect(renewed.every((r) => r !== null && r.data === undefined)).toBe(true);
      const single = await store.renew(renewed[0]!);
      expect(single).not.toBeNull();
      const sent = wire.sent.map((s) => s.sql);
      const bytes = { ...wire.bytes };
      expect(await store.releaseMany(renewed.map((r) => r!))).toEqual(leases.map(() => true));
      const [rows] = await admin.query(
        `SELECT COUNT(*) AS n, SUM(data <=> ?) AS kept FROM \`${table}\` WHERE resource LIKE 'n/%'`,
        [Buffer.from(`s${limit}`)],
      );
      return { sent, bytes, rows: (rows as { n: number; kept: unknown }[])[0]! };
    };
    const plain = await run(false);
    const heavy = await run(true);
    // The statements never name the column, so nothing of it travels or is rewritten…
    expect(heavy.sent.filter((sql) => /\bdata\b/i.test(sql))).toEqual([]);
    // …and the wire cost is the same to the byte, either way (10,000 answer rows came back).
    expect(heavy.sent).toHaveLength(2);
    expect(plain.bytes.in).toBeGreaterThan(10_000 * 10);
    expect(heavy.bytes).toEqual(plain.bytes);
    // Released with the data kept.
    expect([Number(heavy.rows.n), Number(heavy.rows.kept)]).toEqual([10_000, 10_000]);
  });

  it('keeps values of exactly LIMITS.dataMaxBytes exactly: multi-byte UTF-8 and bytes', async () => {
    const store = await open();
    const values: LeaseData[] = [
      utf8Of(LIMITS.dataMaxBytes, '€'),
      utf8Of(LIMITS.dataMaxBytes, '😀'),
      utf8Of(LIMITS.dataMaxBytes, 'é'),
      new Uint8Array(LIMITS.dataMaxBytes).map((_, i) => (i * 7) % 256),
      new Uint8Array(LIMITS.dataMaxBytes).fill(0),
    ];
    for (const [i, value] of values.entries()) {
      const size = typeof value === 'string' ? Buffer.byteLength(value) : value.byteLength;
      expect(size).toBe(LIMITS.dataMaxBytes);
      const lease = (await store.tryAcquire(`max/${i}`, 'a', 60_000))!;
      expect(await store.writeData(lease, value)).toBe(true);
      expect((await store.get(`max/${i}`))!.data).toEqual(value);
      const renewed = (await store.renew(lease, undefined, value))!;
      expect(await store.release(renewed, value)).toBe(true);
      const next = (await store.tryAcquire(`max/${i}`, 'b', 60_000))!;
      expect(next.data).toEqual(value);
      expect(typeof next.data).toBe(typeof value);
      const [listed] = await store.list({ prefix: `max/${i}` });
      expect(listed!.data).toEqual(value);
    }
  });

  it("refuses a paused ex-holder's late writes after a takeover, leaving the new holder's value", async () => {
    const store = await open();
    const old = (await store.tryAcquire('late', 'a', 150))!;
    expect(await store.writeData(old, 'from a')).toBe(true);
    // The holder pauses past its lease; the server clock decides it expired.
    await sleep(300);
    const next = (await store.tryAcquire('late', 'b', 60_000))!;
    expect(next.data).toBe('from a');
    expect(await store.writeData(next, 'from b')).toBe(true);
    // It wakes and writes as if it still held the lease: every form is refused.
    expect(await store.writeData(old, 'late a')).toBe(false);
    expect(await store.renew(old, undefined, 'late a')).toBeNull();
    expect(await store.release(old, 'late a')).toBe(false);
    expect(await store.get('late')).toMatchObject({
      owner: 'b',
      token: next.token,
      data: 'from b',
    });
  });

  it('opens a version 1 table from before lease data: its records read with none and take data', async () => {
    const table = freshNamespace();
    await admin.query(OLD_DDL(table));
    const now = await serverNow();
    await admin.query(
      `INSERT INTO \`${table}\` (resource, owner, token, expires_at)
       VALUES ('old/live', 'a', 4, ?), ('old/released', '', 7, 0), ('old/expired', 'c', 2, ?)`,
      [now + 60_000, now - 1000],
    );
    const store = await open(table);
    const [version] = await admin.query(`SELECT value FROM \`${table}_meta\``);
    expect(version).toEqual([{ value: 2 }]);
    expect(await store.get('old/live')).toEqual({
      resource: 'old/live',
      owner: 'a',
      token: 4,
      expiresAt: now + 60_000,
    });
    expect((await store.list({ prefix: 'old/' })).map((r) => 'data' in r)).toEqual([
      false,
      false,
      false,
    ]);
    // The holder that wrote the record before the upgrade keeps going, now with data.
    const live: Lease = { resource: 'old/live', owner: 'a', token: 4, expiresAt: 0, ttlMs: 60_000 };
    expect(await store.writeData(live, 'upgraded')).toBe(true);
    expect(await store.renew(live, undefined, 'renewed')).toMatchObject({ data: 'renewed' });
    expect(await store.release(live, 'released')).toBe(true);
    expect((await store.tryAcquire('old/live', 'b', 60_000))!).toMatchObject({
      token: 5,
      data: 'released',
    });
    for (const [resource, token] of [
      ['old/released', 8],
      ['old/expired', 3],
    ] as const) {
      const lease = (await store.tryAcquire(resource, 'b', 60_000))!;
      expect(lease).toEqual({
        resource,
        owner: 'b',
        token,
        expiresAt: lease.expiresAt,
        ttlMs: 60_000,
      });
      expect(await store.renew(lease)).not.toBeNull();
      expect(await store.release(lease, `${resource} data`)).toBe(true);
    }
    expect((await store.get('old/expired'))!.data).toBe('old/expired data');
    // A second process on the upgraded table, and one on a table whose upgrade was cut short
    // (the column added, the version not yet written), both open it.
    expect((await (await open(table)).get('old/released'))!.data).toBe('old/released data');
    await admin.query(`UPDATE \`${table}_meta\` SET value = 1`);
    expect((await (await open(table)).get('old/expired'))!.data).toBe('old/expired data');
    const [again] = await admin.query(`SELECT value FROM \`${table}_meta\``);
    expect(again).toEqual([{ value: 2 }]);
  });

  it('answers a grant with its data in one round trip on MySQL too (no RETURNING: one query)', async () => {
    // The store reads the server's flavor; here it is told MySQL, and takes MySQL's path.
    const asMysql = (p: mysql.Pool): MysqlPool => ({
      end: () => p.end(),
      getConnection: async () => {
        const c = (await p.getConnection()) as unknown as MysqlConnection;
        return {
          query: (options, values) =>
            c.query(
              { ...options, sql: options.sql.replace(/VERSION\(\) LIKE '%MariaDB%'/, '0') },
              values,
            ),
          execute: (options, values) => c.execute(options, values),
          release: () => c.release(),
          destroy: () => c.destroy(),
        };
      },
    });
    const { store, wire } = await recorded(asMysql);
    const first = (await store.tryAcquire('my', 'a', 60_000))!;
    await store.release(first, 'kept');
    const granted = await measure(wire, () => store.tryAcquire('my', 'b', 60_000));
    expect(granted.result).toMatchObject({ owner: 'b', token: first.token + 1, data: 'kept' });
    expect((await store.get('my'))!.expiresAt).toBe(granted.result!.expiresAt);
    expect(granted.commands).toEqual(['Query']);
    expect(wire.sent.some((s) => /RETURNING/.test(s.sql))).toBe(false);
    const refused = await measure(wire, () => store.tryAcquire('my', 'c', 60_000));
    expect([refused.result, refused.commands]).toEqual([null, ['Query']]);
    const fresh = await measure(wire, () => store.tryAcquire('my/new', 'c', 60_000));
    expect(fresh.result).toEqual({
      resource: 'my/new',
      owner: 'c',
      token: 1,
      expiresAt: fresh.result!.expiresAt,
      ttlMs: 60_000,
    });
  });
});
