import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type LeaseStore } from '../../src/index.js';
import { MysqlStore } from '../../src/stores/mysql/index.js';
import type { MysqlConnection, MysqlPool } from '../../src/stores/mysql/mysql-driver.js';
import { freshNamespace } from '../conformance/factory.js';
import { describeServer } from '../harness/describe-server.js';
import { mariadbUnavailable, startMariadb, type MariadbServer } from '../harness/mariadb-server.js';
import {
  corruptRecordTests,
  lastTokenTest,
  type CorruptForm,
  type RowPatch,
} from '../harness/sql-corrupt.js';

/*
 * The table's types (token and expires_at BIGINT NOT NULL, owner VARBINARY(256) NOT NULL, no
 * CHECK) keep out NULL, text, fractions and an owner over 256 bytes; what a hand-written row can
 * still hold is below.
 */
const FORMS: CorruptForm[] = [
  { name: 'token 0', patch: { token: '0' } },
  { name: 'negative token', patch: { token: '-3' } },
  { name: 'token 2^53', patch: { token: '9007199254740992' } },
  { name: 'token 2^53 + 1', patch: { token: '9007199254740993' } },
  { name: 'token 2^63 − 1', patch: { token: '9223372036854775807' } },
  { name: 'negative expiresAt', patch: { expires_at: '-1' } },
  { name: 'expiresAt 2^60', patch: { expires_at: String(2n ** 60n) } },
];

/** A pool whose connections tell the store the server is MySQL: it takes MySQL's acquire path. */
function asMysql(p: mysql.Pool): MysqlPool {
  return {
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
  };
}

const unavailable = mariadbUnavailable();

describeServer('MySQL store (MariaDB): corrupt records', unavailable, () => {
  let server: MariadbServer;
  let admin: mysql.Pool;
  const stores: LeaseStore[] = [];

  beforeAll(async () => {
    server = await startMariadb();
    admin = mysql.createPool({ uri: server.url(), multipleStatements: true });
  });
  afterAll(async () => {
    await Promise.allSettled(stores.map((s) => s.close()));
    await admin?.end();
    await server?.dispose();
  });

  function target(table: string, store: () => LeaseStore) {
    /** The patch by raw SQL on an admin connection, as another program would write it. */
    async function patch(resource: string, values: RowPatch): Promise<void> {
      const set = Object.keys(values)
        .map((c) => `${c} = ?`)
        .join(', ');
      await admin.query(`UPDATE \`${table}\` SET ${set} WHERE resource = ?`, [
        ...Object.values(values),
        resource,
      ]);
    }
    async function snapshot(resource: string): Promise<unknown> {
      const [rows] = await admin.query(
        `SELECT HEX(owner) AS owner, CAST(token AS CHAR) AS token,
                CAST(expires_at AS CHAR) AS expires_at
         FROM \`${table}\` WHERE resource = ?`,
        [resource],
      );
      return (rows as unknown[])[0];
    }
    return { store, patch, snapshot };
  }

  describe('on the MariaDB path (RETURNING)', () => {
    const table = freshNamespace();
    let store: LeaseStore;
    beforeAll(async () => {
      store = await openStore(server.url({ table }));
      stores.push(store);
    });
    const t = target(table, () => store);
    corruptRecordTests(t, FORMS);
    lastTokenTest(t, String(Number.MAX_SAFE_INTEGER));

    it('cannot be written with NULL, text, a fraction or an owner over 256 bytes', async () => {
      const lease = (await store.tryAcquire('corrupt-types', 'me', 60_000))!;
      for (const column of ['owner', 'token', 'expires_at'] as const)
        await expect(t.patch(lease.resource, { [column]: null })).rejects.toThrow(/cannot be null/);
      await expect(t.patch(lease.resource, { token: 'abc' })).rejects.toThrow(
        /Incorrect|Truncated/,
      );
      await expect(t.patch(lease.resource, { owner: 'o'.repeat(257) })).rejects.toThrow(/too long/);
      // A fraction is rounded to a whole token by the column, not stored.
      await t.patch(lease.resource, { token: 1.4 });
      expect(await store.get(lease.resource)).toMatchObject({ owner: 'me', token: 1 });
    });
  });

  describe('on the MySQL path (no RETURNING)', () => {
    const table = freshNamespace();
    let store: LeaseStore;
    beforeAll(async () => {
      const pool = mysql.createPool({ uri: server.url(), multipleStatements: true });
      store = new MysqlStore(asMysql(pool), { table });
      stores.push(store, { close: () => pool.end() } as LeaseStore);
    });
    const t = target(table, () => store);
    corruptRecordTests(t, FORMS.slice(0, 2));
    lastTokenTest(t, String(Number.MAX_SAFE_INTEGER));
  });
});
