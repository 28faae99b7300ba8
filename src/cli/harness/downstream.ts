import Database from 'better-sqlite3';
import { SqliteFence } from '../../index.js';
import type { HistoryRecord, WriteRecord } from './history-format.js';

/** The downstream's own table: every accepted fenced write, in commit order (`id`). */
export const WRITES_TABLE = 'demo_writes';

const CREATE = `CREATE TABLE IF NOT EXISTS ${WRITES_TABLE} (
  id       INTEGER PRIMARY KEY AUTOINCREMENT,
  resource TEXT    NOT NULL,
  token    INTEGER NOT NULL,
  worker   TEXT    NOT NULL,
  seq      INTEGER NOT NULL,
  at       REAL    NOT NULL
)`;

/** Opens the downstream SQLite file in WAL mode. */
export function openDownstream(path: string): Database.Database {
  const db = new Database(path, { timeout: 10_000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  return db;
}

/** Creates the downstream file with its table and the fence's, once, before the workers start. */
export async function createDownstream(path: string): Promise<void> {
  const db = openDownstream(path);
  try {
    db.exec(CREATE);
    await new SqliteFence(db).init();
  } finally {
    db.close();
  }
}

export function insertWrite(db: Database.Database): Database.Statement {
  return db.prepare(
    `INSERT INTO ${WRITES_TABLE} (resource, token, worker, seq, at) VALUES (?, ?, ?, ?, ?)`,
  );
}

/**
 * Accepted writes in the downstream that no worker reported (it died right after committing), so
 * that the history holds every committed write once, in commit order by `commit`.
 */
export function unreportedWrites(path: string, records: readonly HistoryRecord[]): WriteRecord[] {
  const reported = new Set(
    records.flatMap((r) => (r.type === 'write' && r.commit !== undefined ? [r.commit] : [])),
  );
  const db = new Database(path, { readonly: true, timeout: 10_000 });
  try {
    const rows = db
      .prepare(`SELECT id, resource, token, worker, at FROM ${WRITES_TABLE} ORDER BY id`)
      .all() as { id: number; resource: string; token: number; worker: string; at: number }[];
    return rows
      .filter((row) => !reported.has(row.id))
      .map((row) => ({
        type: 'write',
        resource: row.resource,
        owner: row.worker,
        token: row.token,
        at: row.at,
        outcome: 'accepted',
        commit: row.id,
      }));
  } finally {
    db.close();
  }
}
