/** Schema version this release writes and understands. Bump it with a new entry in `migrations`. */
export const SCHEMA_VERSION = 1;

export function migrations(table: string): string[] {
  return [
    // 0 → 1
    `CREATE TABLE IF NOT EXISTS "${table}" (
       resource   TEXT    PRIMARY KEY,
       owner      TEXT    NOT NULL,
       token      INTEGER NOT NULL,
       expires_at INTEGER NOT NULL
     ) WITHOUT ROWID`,
  ];
}

export function metaTable(table: string): string {
  return `CREATE TABLE IF NOT EXISTS "${table}_meta" (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID`;
}

export function statements(table: string) {
  const t = `"${table}"`;
  return {
    readVersion: `SELECT value FROM "${table}_meta" WHERE key = 'schema_version'`,
    writeVersion: `INSERT INTO "${table}_meta" (key, value) VALUES ('schema_version', ?)
                   ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    // One statement: insert the first record, or take over a released or expired one.
    acquire: `INSERT INTO ${t} (resource, owner, token, expires_at) VALUES (@resource, @owner, 1, @now + @ttl)
              ON CONFLICT (resource) DO UPDATE SET owner = excluded.owner, token = token + 1, expires_at = excluded.expires_at
              WHERE owner = '' OR expires_at + @skew < @now
              RETURNING token, expires_at AS expiresAt`,
    renew: `UPDATE ${t} SET expires_at = @now + @ttl
            WHERE resource = @resource AND owner = @owner AND token = @token
            RETURNING expires_at AS expiresAt`,
    release: `UPDATE ${t} SET owner = '', expires_at = 0
              WHERE resource = @resource AND owner = @owner AND token = @token`,
    get: `SELECT resource, owner, token, expires_at AS expiresAt FROM ${t} WHERE resource = ?`,
    listRange: `SELECT resource, owner, token, expires_at AS expiresAt FROM ${t}
                WHERE resource >= @from AND resource < @to ORDER BY resource LIMIT @limit`,
    listFrom: `SELECT resource, owner, token, expires_at AS expiresAt FROM ${t}
               WHERE resource >= @from ORDER BY resource LIMIT @limit`,
  };
}
