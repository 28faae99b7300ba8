import { ErrorCode, LeaseError } from '../../core/errors.js';
import { migrateSchema } from '../../core/migrations.js';
import {
  queryOptions as q,
  withConnection,
  type MysqlConnection,
  type MysqlPool,
} from './mysql-driver.js';
import { isAlreadyDone, isNoSuchTable, isParseError } from './mysql-errors.js';
import { metaTable, migrations, SCHEMA_VERSION, type Statements } from './mysql-ops.js';
import type { ResolvedMysqlOptions } from './mysql-options.js';
import { bytes, int } from './mysql-record.js';

/**
 * Reads the schema version and, unless it is current, creates or upgrades the tables under a
 * named lock so racing processes migrate once. The usual case is one round trip. Answers whether
 * the server is MariaDB, which answers `INSERT … RETURNING`.
 */
export async function migrate(
  pool: MysqlPool,
  options: ResolvedMysqlOptions,
  sql: Statements,
): Promise<boolean> {
  const { table, queryTimeoutMs } = options;
  return withConnection(pool, options, async (c) => {
    let mariadb = false;
    await migrateSchema({
      what: `table ${table}`,
      version: SCHEMA_VERSION,
      steps: migrations(table),
      readFirst: async () => {
        // Two statements in one: fails with a parse error unless the pool allows multi-statements.
        const first = await readVersion(c, `${sql.flavor}; ${sql.readVersion}`, 1);
        mariadb = first.mariadb ?? (await isMariadb(c, sql.flavor));
        return first.version;
      },
      readVersion: async () => (await readVersion(c, sql.readVersion, 0)).version,
      locked: async (work) => {
        const waitSeconds = Math.max(0, Math.floor(queryTimeoutMs / 2) / 1000);
        const [locked] = (await c.query(q(sql.lockName), [bytes(table), waitSeconds])) as [
          { got: unknown }[],
          unknown,
        ];
        if (Number(locked[0]?.got) !== 1) {
          throw new LeaseError(
            ErrorCode.STORE_UNAVAILABLE,
            `init: another process is creating or upgrading table ${table}; try again`,
          );
        }
        try {
          await work();
        } finally {
          await c.query(q(sql.unlock), [bytes(table)]);
        }
      },
      createMeta: () => c.query(q(metaTable(table))),
      runStep: (statement) => step(c, statement),
      writeVersion: (version) => c.query(q(sql.writeVersion), [version, version]),
    });
    return mariadb;
  });
}

/**
 * The version in `<table>_meta`, 0 when the table or the row is missing; with `index` 1, the
 * server's flavor too (the first statement's answer), unless the meta table is missing.
 */
async function readVersion(
  c: MysqlConnection,
  sql: string,
  index: number,
): Promise<{ version: number; mariadb?: boolean }> {
  try {
    const [results] = await c.query(q(sql));
    const rows = (index === 0 ? results : (results as unknown[])[index]) as { value: unknown }[];
    const version = rows[0] ? int(rows[0].value, 'schema version') : 0;
    if (index === 0) return { version };
    const flavor = (results as { mariadb: unknown }[][])[0]![0]!;
    return { version, mariadb: Number(flavor.mariadb) === 1 };
  } catch (error) {
    if (isNoSuchTable(error)) return { version: 0 };
    if (isParseError(error) && index > 0) {
      throw new LeaseError(
        ErrorCode.INVALID_ARGUMENT,
        'the mysql2 pool must be created with multipleStatements: true (leasehold sends the statements of one transition in one round trip)',
        { cause: error },
      );
    }
    throw error;
  }
}

async function isMariadb(c: MysqlConnection, sql: string): Promise<boolean> {
  const [rows] = await c.query(q(sql));
  return Number((rows as { mariadb: unknown }[])[0]?.mariadb) === 1;
}

/** Runs one migration step; one that already ran (cut short before its version was written) is done. */
async function step(c: MysqlConnection, sql: string): Promise<void> {
  try {
    await c.query(q(sql));
  } catch (error) {
    if (!isAlreadyDone(error)) throw error;
  }
}
