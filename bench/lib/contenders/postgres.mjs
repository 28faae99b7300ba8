// PostgreSQL: leasehold beside the bare compare-and-set of the same shape: one prepared
// INSERT … ON CONFLICT … RETURNING token to acquire, one prepared UPDATE to release, the server's
// clock deciding expiry; a pool of 10 (leasehold's default) on both sides.
import pg from 'pg';
import { leaseholdContenders } from './leasehold.mjs';

const POOL = 10;
const NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
const TABLE = `CREATE TABLE IF NOT EXISTS cas (resource text COLLATE "C" PRIMARY KEY,
  owner text NOT NULL, token bigint NOT NULL, expires_at bigint NOT NULL)`;
const ACQUIRE = `INSERT INTO cas AS l VALUES ($1, $2, 1, ${NOW} + $3)
  ON CONFLICT (resource) DO UPDATE
    SET owner = excluded.owner, token = l.token + 1, expires_at = excluded.expires_at
    WHERE l.owner = '' OR l.expires_at < excluded.expires_at - $3
  RETURNING token, expires_at`;
const RELEASE = `UPDATE cas SET owner = '', expires_at = 0 WHERE resource = $1 AND owner = $2 AND token = $3`;

// Every statement any pg client of this process sends (leasehold loads this same pg module).
let statements = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(...args) {
  statements++;
  return query.apply(this, args);
};

export function contenders({ server, libs, ttlMs }) {
  return [
    ...leaseholdContenders(libs, server.url, ttlMs),
    {
      name: 'bare',
      role: 'bare',
      describe: 'pg: prepared INSERT … ON CONFLICT DO UPDATE … RETURNING token; prepared UPDATE',
      open: async () => {
        const pool = new pg.Pool({ connectionString: server.base, max: POOL });
        await pool.query(TABLE);
        const acquire = { name: 'cas_acquire', text: ACQUIRE };
        const release = { name: 'cas_release', text: RELEASE };
        return {
          cycle: async (w) => {
            const resource = `job/${w}`;
            const { rows } = await pool.query({ ...acquire, values: [resource, `o${w}`, ttlMs] });
            if (rows.length !== 1) throw new Error('bare: not acquired');
            const done = await pool.query({
              ...release,
              values: [resource, `o${w}`, rows[0].token],
            });
            if (done.rowCount !== 1) throw new Error('bare: release refused');
          },
          close: () => pool.end(),
        };
      },
    },
  ];
}

/** Statements sent, counted here: the requests PostgreSQL received from the contenders. */
export async function probe() {
  return { read: async () => statements, close: async () => {} };
}
