import { ErrorCode, LeaseError } from './errors.js';

/**
 * The migration steps that take a table from schema version `current` to `target`, where
 * `steps[v]` goes from `v` to `v + 1`: none when it is current. A table newer than this release
 * understands is refused (`STORE_UNAVAILABLE`, not retryable), never written: an older release
 * must not run over a layout it does not know. `what` names the table in the message.
 */
export function stepsToRun(
  what: string,
  current: number,
  target: number,
  steps: readonly string[],
): readonly string[] {
  if (current > target) {
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `${what} has schema version ${current}, newer than this leasehold understands (${target}); upgrade leasehold`,
      { retryable: false },
    );
  }
  if (steps.length < target) {
    throw new Error(`${target} migration steps are needed, ${steps.length} are written`);
  }
  return steps.slice(current, target);
}

/** What `migrateSchema` runs on: a SQL store's own statements, connection and lock. */
export interface SchemaMigration {
  /** The table, as the refusal of a newer schema names it (see `stepsToRun`). */
  readonly what: string;
  /** The schema version this release writes. */
  readonly version: number;
  /** The steps: `steps[v]` takes the table from version `v` to `v + 1`. */
  readonly steps: readonly string[];
  /** The version the meta table records; `undefined` (or 0) where it records none yet. */
  readVersion(): Promise<number | undefined>;
  /** The first read, without the lock, where the store sends more with it. @default readVersion */
  readFirst?(): Promise<number | undefined>;
  /** Runs `work` holding the store's migration lock (within its transaction, where it has one). */
  locked(work: () => Promise<void>): Promise<void>;
  /** Creates the meta table (and what holds it) when missing: the first thing under the lock. */
  createMeta(): Promise<unknown>;
  runStep(sql: string): Promise<unknown>;
  writeVersion(version: number): Promise<unknown>;
  /**
   * Writes the version under the lock even when the table is at it already (another process
   * migrated it between the first read and the lock). @default false
   */
  readonly writesCurrentVersion?: boolean;
}

/**
 * Brings a table to `version`. The first read, without the lock, ends it when the table is current
 * (the usual case: one read, no DDL). Otherwise, under the store's lock, so racing processes
 * migrate once: the meta table made, the version read again, the steps from it run in order, and
 * the new version written. A table newer than this release understands is refused there.
 * PostgreSQL and MySQL migrate through it; SQLite, whose driver is synchronous and whose store
 * sets a file up inside its constructor, runs the same steps itself (sqlite-schema.ts).
 */
export async function migrateSchema(migration: SchemaMigration): Promise<void> {
  const { what, version, steps } = migration;
  const found = await (migration.readFirst ?? migration.readVersion).call(migration);
  if (found === version) return;
  await migration.locked(async () => {
    await migration.createMeta();
    const current = (await migration.readVersion()) ?? 0;
    for (const step of stepsToRun(what, current, version, steps)) await migration.runStep(step);
    if (current !== version || migration.writesCurrentVersion)
      await migration.writeVersion(version);
  });
}
