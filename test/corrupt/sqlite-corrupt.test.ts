import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/index.js';
import { tempDir } from '../harness/processes.js';
import {
  corruptRecordTests,
  lastTokenTest,
  type CorruptForm,
  type RowPatch,
} from '../harness/sql-corrupt.js';

/*
 * SQLite keeps any type in any column; NOT NULL is the table's only constraint, so every form but
 * NULL (and a missing column: a row has them all) can be written. A text token of digits is stored
 * as the integer it spells (INTEGER affinity), and an integer owner as text (TEXT affinity): no
 * corrupt forms here.
 */
const FORMS: CorruptForm[] = [
  { name: 'token as text', patch: { token: 'abc' } },
  { name: 'token as empty text', patch: { token: '' } },
  { name: 'fractional token', patch: { token: 1.5 } },
  { name: 'token 0', patch: { token: 0 } },
  { name: 'negative token', patch: { token: -3 } },
  { name: 'token 2^53 + 1', patch: { token: 2n ** 53n + 1n } },
  { name: 'token 2^63 − 1', patch: { token: 2n ** 63n - 1n } },
  { name: 'token as a blob', patch: { token: Buffer.from([1]) } },
  { name: 'owner of 300 bytes', patch: { owner: 'o'.repeat(300) } },
  { name: 'owner as a blob', patch: { owner: Buffer.from('holder') } },
  { name: 'expiresAt as text', patch: { expires_at: 'soon' } },
  { name: 'fractional expiresAt', patch: { expires_at: 1.5 } },
  { name: 'negative expiresAt', patch: { expires_at: -1 } },
  { name: 'expiresAt 2^60', patch: { expires_at: 2n ** 60n } },
  { name: 'expiresAt as a blob', patch: { expires_at: Buffer.from([0]) } },
];

const TABLE = '"leasehold_leases"';
const dir = tempDir('leasehold-sqlite-corrupt-');
const path = `${dir.path}/leases.db`;
let store: SqliteStore;
let raw: Database.Database;

beforeAll(async () => {
  store = await SqliteStore.open(path);
  raw = new Database(path);
});

afterAll(async () => {
  await store?.close();
  raw?.close();
  dir.cleanup();
});

/** The patch by raw SQL on a connection of its own, as another program would write it. */
async function patch(resource: string, values: RowPatch): Promise<void> {
  const columns = Object.keys(values);
  raw
    .prepare(`UPDATE ${TABLE} SET ${columns.map((c) => `${c} = ?`).join(', ')} WHERE resource = ?`)
    .run(...Object.values(values), resource);
}

async function snapshot(resource: string): Promise<unknown> {
  return raw
    .prepare(
      `SELECT quote(owner) AS owner, quote(token) AS token, quote(expires_at) AS expiresAt
       FROM ${TABLE} WHERE resource = ?`,
    )
    .get(resource);
}

describe('SqliteStore: corrupt records', () => {
  const target = { store: () => store, patch, snapshot };
  corruptRecordTests(target, FORMS);
  lastTokenTest(target, Number.MAX_SAFE_INTEGER);

  it('cannot be written with NULL in any column (NOT NULL)', async () => {
    const lease = (await store.tryAcquire('corrupt-null', 'me', 60_000))!;
    for (const column of ['owner', 'token', 'expires_at'] as const)
      await expect(patch(lease.resource, { [column]: null })).rejects.toThrow(/NOT NULL/);
  });
});
