import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, type LeaseStore } from '../../src/index.js';
import { statements } from '../../src/stores/postgres/postgres-ops.js';
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

  // The validity check once made the planner expect one row of a new table (three range
  // conditions at 0.5 % each) and join it in a nested loop, comparing every lease with every row:
  // a fleet's renewMany of 1,250 on 10,000 rows took seconds and its leases lapsed. Counted in
  // rows compared, not in time.
  it('renewMany and releaseMany on a new table join the leases by key, not every lease with every row', async () => {
    const plans = `plans_${table}`;
    const planStore = await openStore(`${server.url}?table=${plans}`);
    try {
      const names = Array.from({ length: 10_000 }, (_, i) => `p/${String(i).padStart(5, '0')}`);
      const leases = [];
      for (let i = 0; i < names.length; i += 500)
        for (const o of await planStore.acquireMany(names.slice(i, i + 500), 'w', 60_000))
          leases.push(o.lease!);
      const mine = leases.slice(0, 1250);
      const sql = statements('public', plans, true);
      const args = {
        renewMany: [
          mine.map((l) => l.resource),
          mine.map((l) => l.owner),
          mine.map((l) => l.token),
          mine.map(() => 60_000),
        ],
        releaseMany: [
          mine.map((l) => l.resource),
          mine.map((l) => l.owner),
          mine.map((l) => l.token),
          'plans_channel',
        ],
      };
      const client = await admin.connect();
      try {
        for (const [name, params] of Object.entries(args)) {
          await client.query('BEGIN');
          const { rows } = await client.query(
            `EXPLAIN (ANALYZE, FORMAT JSON) ${sql[name as keyof typeof args]}`,
            params,
          );
          await client.query('ROLLBACK');
          let removed = 0;
          const walk = (node: Record<string, unknown>): void => {
            removed += Number(node['Rows Removed by Join Filter'] ?? 0);
            for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? [])
              walk(child);
          };
          walk((rows[0]['QUERY PLAN'] as { Plan: Record<string, unknown> }[])[0]!.Plan);
          // By key: no lease compared with more than a few rows (every lease with every row: 12,500,000).
          expect(removed, name).toBeLessThan(10 * mine.length);
        }
      } finally {
        client.release();
      }
    } finally {
      await planStore.close();
    }
  });
});
