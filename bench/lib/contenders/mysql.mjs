// MySQL / MariaDB: leasehold beside the bare compare-and-set of the same shape: one prepared
// INSERT … ON DUPLICATE KEY UPDATE with a token column, yielding the token through
// LAST_INSERT_ID (0: refused), to acquire; one prepared UPDATE to release; the server's clock
// deciding expiry; a pool of 10 (leasehold's default) on both sides.
import { Buffer } from 'node:buffer';
import mysql from 'mysql2/promise';
import { DATABASE } from '../private-servers.mjs';
import { leaseholdContenders } from './leasehold.mjs';

const POOL = 10;
const NOW_MS = `(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)`;
const TABLE = `CREATE TABLE IF NOT EXISTS cas (resource VARBINARY(512) NOT NULL PRIMARY KEY,
  owner VARBINARY(256) NOT NULL, token BIGINT NOT NULL, expires_at BIGINT NOT NULL) ENGINE=InnoDB`;
const ACQUIRE = `INSERT INTO cas VALUES (?, ?, LAST_INSERT_ID(1), ${NOW_MS} + ?)
  ON DUPLICATE KEY UPDATE
    token = IF(expires_at < ${NOW_MS}, LAST_INSERT_ID(token + 1), token + LAST_INSERT_ID(0)),
    owner = IF(expires_at < ${NOW_MS}, VALUES(owner), owner),
    expires_at = IF(expires_at < ${NOW_MS}, VALUES(expires_at), expires_at)`;
const RELEASE = `UPDATE cas SET owner = '', expires_at = 0 WHERE resource = ? AND owner = ? AND token = ?`;

const connect = (server, options = {}) =>
  mysql.createPool({
    host: '127.0.0.1',
    port: server.port,
    user: 'root',
    database: DATABASE,
    ...options,
  });

export function contenders({ server, libs, ttlMs }) {
  return [
    ...leaseholdContenders(libs, server.url, ttlMs),
    {
      name: 'bare',
      role: 'bare',
      describe:
        'mysql2: prepared INSERT … ON DUPLICATE KEY UPDATE, token via LAST_INSERT_ID; prepared UPDATE',
      open: async () => {
        const pool = connect(server, { connectionLimit: POOL, supportBigNumbers: true });
        await pool.query(TABLE);
        return {
          cycle: async (w) => {
            const resource = Buffer.from(`job/${w}`);
            const owner = Buffer.from(`o${w}`);
            const [ok] = await pool.execute(ACQUIRE, [resource, owner, ttlMs]);
            const token = Number(ok.insertId);
            if (token === 0) throw new Error('bare: not acquired');
            const [done] = await pool.execute(RELEASE, [resource, owner, token]);
            if (done.affectedRows !== 1) throw new Error('bare: release refused');
          },
          close: () => pool.end(),
        };
      },
    },
  ];
}

/** The server's `Questions` counter, less this probe's own SHOW STATUS. */
export async function probe(server) {
  const pool = connect(server, { connectionLimit: 1 });
  let reads = 0;
  return {
    read: async () => {
      const [rows] = await pool.query(`SHOW GLOBAL STATUS LIKE 'Questions'`);
      return Number(rows[0].Value) - ++reads;
    },
    close: () => pool.end(),
  };
}
