/** The SQL of `PostgresFence`, for a table name already checked to be a plain identifier. */
export function postgresFenceSql(table: string) {
  const t = `"${table}"`;
  return {
    // COLLATE "C": resource names compare as bytes, as the lease stores order them.
    create: `CREATE TABLE IF NOT EXISTS ${t} (
               resource   text COLLATE "C" PRIMARY KEY,
               token      bigint      NOT NULL CHECK (token > 0),
               updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
             )`,
    // READ COMMITTED on purpose: a writer that finds the row locked waits for the holder's commit
    // and then judges its token against the committed one (the row lock serialises the writers).
    begin: 'BEGIN ISOLATION LEVEL READ COMMITTED',
    // The first token for a resource, or one at least as high as the highest seen; no row comes
    // back when the token is stale. Either way the row stays locked until the transaction ends.
    advance: `INSERT INTO ${t} AS f (resource, token) VALUES ($1, $2)
              ON CONFLICT (resource) DO UPDATE SET token = excluded.token, updated_at = clock_timestamp()
              WHERE f.token <= excluded.token
              RETURNING token`,
    highest: `SELECT token FROM ${t} WHERE resource = $1`,
  };
}
