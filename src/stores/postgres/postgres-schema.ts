import { migrateSchema } from '../../core/migrations.js';
import { checkOut } from '../../drivers/pg-checkout.js';
import type { PgPool, PgQueryResult } from './postgres-driver.js';
import { isMissingRelation } from './postgres-errors.js';
import { migrations, SCHEMA_VERSION, setupStatements } from './postgres-ops.js';
import { safeInteger } from './postgres-record.js';

/** Where the lease table is and how long each setup statement may take. */
export interface SchemaTarget {
  readonly schema: string;
  readonly table: string;
  readonly statementTimeoutMs: number;
}

/**
 * Creates the schema, the table and its meta table when missing, or upgrades them, on one pooled
 * connection, under an advisory lock so concurrent first users migrate once. A table already at
 * `SCHEMA_VERSION` is one read, with no DDL.
 */
export async function migrate(pool: PgPool, target: SchemaTarget): Promise<void> {
  const { schema, table, statementTimeoutMs } = target;
  const setup = setupStatements(schema, table);
  const client = await checkOut(pool);
  const run = (text: string, values?: unknown[]): Promise<PgQueryResult> =>
    client.query({ text, values, query_timeout: statementTimeoutMs });
  let failure: Error | undefined;
  try {
    await migrateSchema({
      what: `table "${schema}"."${table}"`,
      version: SCHEMA_VERSION,
      steps: migrations(schema, table),
      // Also the first read: without DDL (which needs CREATE rights even when the table exists).
      readVersion: () => readVersion(() => run(setup.readVersion)),
      locked: async (work) => {
        await run('BEGIN');
        // One key per schema: tables created side by side in a new schema also create it once.
        await run(setup.lock, [`leasehold:${schema}`]);
        await work();
        await run('COMMIT');
      },
      createMeta: async () => {
        const exists = await run(setup.schemaExists, [schema]);
        if (exists.rows.length === 0) await run(setup.createSchema);
        await run(setup.createMeta);
      },
      runStep: (step) => run(step),
      writeVersion: (version) => run(setup.writeVersion, [version]),
      writesCurrentVersion: true,
    });
  } catch (error) {
    failure = error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    // After a failure the connection is closed, which also rolls back an open transaction.
    client.release(failure);
  }
}

/** The schema version in the meta table, `undefined` when there is no meta table (or schema) yet. */
async function readVersion(read: () => Promise<PgQueryResult>): Promise<number | undefined> {
  try {
    const { rows } = await read();
    return rows[0] ? safeInteger(rows[0].value, 'schema_version') : undefined;
  } catch (error) {
    if (isMissingRelation(error)) return undefined;
    throw error;
  }
}
