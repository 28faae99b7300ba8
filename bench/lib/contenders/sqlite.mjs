// SQLite: leasehold beside the bare compare-and-set of the same shape: one INSERT … ON CONFLICT
// DO UPDATE … RETURNING token to acquire, one UPDATE to release, on a WAL file with
// synchronous=FULL (leasehold's default), the caller's clock deciding expiry.
import Database from 'better-sqlite3';
import { leaseholdContenders } from './leasehold.mjs';

const TABLE = `CREATE TABLE IF NOT EXISTS cas (resource TEXT PRIMARY KEY, owner TEXT NOT NULL,
  token INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID`;
const ACQUIRE = `INSERT INTO cas (resource, owner, token, expires_at) VALUES (?, ?, 1, ? + ?)
  ON CONFLICT (resource) DO UPDATE SET owner = excluded.owner, token = token + 1,
    expires_at = excluded.expires_at
  WHERE owner = '' OR expires_at < ?
  RETURNING token`;
const RELEASE = `UPDATE cas SET owner = '', expires_at = 0 WHERE resource = ? AND owner = ? AND token = ?`;

export function contenders({ server, libs, ttlMs }) {
  return [
    ...leaseholdContenders(libs, server.url, ttlMs),
    {
      name: 'bare',
      role: 'bare',
      describe: 'better-sqlite3: INSERT … ON CONFLICT DO UPDATE … RETURNING token; UPDATE',
      open: async () => {
        const db = new Database(`${server.dir}/bare.db`, { timeout: 5000 });
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = FULL');
        db.exec(TABLE);
        const acquire = db.prepare(ACQUIRE);
        const release = db.prepare(RELEASE);
        return {
          cycle: async (w) => {
            const now = Date.now();
            const row = acquire.get(`job/${w}`, `o${w}`, now, ttlMs, now);
            if (!row) throw new Error('bare: not acquired');
            if (release.run(`job/${w}`, `o${w}`, row.token).changes !== 1)
              throw new Error('bare: release refused');
          },
          close: async () => db.close(),
        };
      },
    },
  ];
}
