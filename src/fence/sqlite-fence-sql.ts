/** The SQL of `SqliteFence`, for a table name already checked to be a plain identifier. */
export function sqliteFenceSql(table: string) {
  const t = `"${table}"`;
  return {
    create: `CREATE TABLE IF NOT EXISTS ${t} (
               resource   TEXT    PRIMARY KEY,
               token      INTEGER NOT NULL CHECK (token > 0),
               updated_at INTEGER NOT NULL
             ) WITHOUT ROWID`,
    // One statement: the first token for a resource, or one at least as high as the highest seen.
    // No row comes back when the token is stale, and then nothing was written.
    advance: `INSERT INTO ${t} (resource, token, updated_at) VALUES (?, ?, ?)
              ON CONFLICT (resource) DO UPDATE SET token = excluded.token, updated_at = excluded.updated_at
              WHERE ${t}.token <= excluded.token
              RETURNING token`,
    highest: `SELECT token FROM ${t} WHERE resource = ?`,
  };
}
