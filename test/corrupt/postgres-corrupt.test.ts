import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, type LeaseStore } from '../../src/index.js';
import { freshNamespace } from '../conformance/factory.js';
import { describeServer } from '../harness/describe-server.js';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import {
  corruptRecordTests,
  lastTokenTest,
  type CorruptForm,
  type RowPatch,
} from '../harness/sql-corrupt.js';

/*
 * The table's types (token and expires_at bigint, owner text, all NOT NULL, no CHECK) keep out
 * NULL, text and fractions; what a hand-written row can still hold is below.
 */
const FORMS: CorruptForm[] = [
  { name: 'token 0', patch: { token: '0' } },
  { name: 'negative token', patch: { token: '-3' } },
  { name: 'token 2^53', patch: { token: '9007199254740992' } },
  { name: 'token 2^53 + 1', patch: { token: '9007199254740993' } },
  { name: 'token 2^63 − 1', patch: { token: '9223372036854775807' } },
  { name: 'owner of 300 bytes', patch: { owner: 'o'.repeat(300) } },
  { name: 'owner of 200 characters, 400 bytes', patch: { owner: 'é'.repeat(200) } },
  { name: 'negative expiresAt', patch: { expires_at: '-1' } },
  { name: 'expiresAt 2^60', patch: { expires_at: String(2n ** 60n) } },
];

const unavailable = postgresUnavailable();

describeServer('PostgresStore: corrupt records', unavailable, () => {
  const table = freshNamespace();
  let server: PostgresServer;
  let admin: pg.Pool;
  let store: LeaseStore;

  beforeAll(async () => {
    server = await PostgresServer.start();
    admin = new pg.Pool({ connectionString: server.url, max: 2 });
    admin.on('error', () => {});
    store = await openStore(`${server.url}?table=${table}`);
  });
  afterAll(async () => {
    await store?.close();
    await admin?.end();
    await server?.stop();
  });

  /** The patch by raw SQL on an admin connection, as another program would write it. */
  async function patch(resource: string, values: RowPatch): Promise<void> {
    const columns = Object.keys(values);
    const set = columns.map((c, i) => `${c} = $${i + 2}`).join(', ');
    await admin.query(`UPDATE "${table}" SET ${set} WHERE resource = $1`, [
      resource,
      ...Object.values(values),
    ]);
  }

  async function snapshot(resource: string): Promise<unknown> {
    const { rows } = await admin.query(
      `SELECT owner, token::text, expires_at::text FROM "${table}" WHERE resource = $1`,
      [resource],
    );
    return rows[0];
  }

  const target = { store: () => store, patch, snapshot };
  corruptRecordTests(target, FORMS);
  lastTokenTest(target, String(Number.MAX_SAFE_INTEGER));

  it('cannot be written with NULL, text or a fraction (the column types refuse them)', async () => {
    const lease = (await store.tryAcquire('corrupt-types', 'me', 60_000))!;
    for (const column of ['owner', 'token', 'expires_at'] as const)
      await expect(patch(lease.resource, { [column]: null })).rejects.toThrow(/not-null/);
    await expect(patch(lease.resource, { token: 'abc' })).rejects.toThrow(/bigint/);
    await expect(patch(lease.resource, { token: '1.5' })).rejects.toThrow(/bigint/);
    await expect(patch(lease.resource, { expires_at: 'soon' })).rejects.toThrow(/bigint/);
    expect(await store.get(lease.resource)).toMatchObject({ owner: 'me', token: lease.token });
  });
});
