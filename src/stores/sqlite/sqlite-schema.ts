import { stepsToRun } from '../../core/migrations.js';
import type { SqliteDatabase } from './sqlite-driver.js';
import { isBusy } from './sqlite-errors.js';
import { metaTable, migrations, SCHEMA_VERSION, versionStatements } from './sqlite-ops.js';

/**
 * The longest SQLite's own busy handler may block the event loop on one statement while a file is
 * set up; beyond it, `setUpFileRetrying` waits asynchronously and tries again.
 */
export const SETUP_BUSY_TIMEOUT_MS = 10;
const RETRY_MAX_MS = 50;

export interface FileSettings {
  readonly table: string;
  readonly synchronous: 'full' | 'normal';
  readonly busyTimeoutMs: number;
}

/**
 * WAL mode, the sync level and the schema, in one attempt, leaving the busy timeout as it is.
 * Throws the driver's `SQLITE_BUSY` when another connection holds a lock it needs.
 */
export function setUpFile(db: SqliteDatabase, { table, synchronous }: FileSettings): void {
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous.toUpperCase()}`);
  migrate(db, table);
}

/**
 * `setUpFile` for processes that open one fresh file at the same moment (where switching to WAL
 * and creating the tables race): each statement blocks at most `SETUP_BUSY_TIMEOUT_MS`, and a busy
 * attempt is repeated after a short asynchronous backoff until `busyTimeoutMs` has passed. Leaves
 * the connection's busy timeout short: the store keeps it that way.
 */
export async function setUpFileRetrying(db: SqliteDatabase, settings: FileSettings): Promise<void> {
  const started = performance.now();
  db.pragma(`busy_timeout = ${Math.min(SETUP_BUSY_TIMEOUT_MS, settings.busyTimeoutMs)}`);
  for (let attempt = 0; ; attempt++) {
    try {
      setUpFile(db, settings);
      break;
    } catch (error) {
      const left = settings.busyTimeoutMs - (performance.now() - started);
      if (!isBusy(error) || left <= 0) throw error;
      const backoff = Math.min(RETRY_MAX_MS, 2 ** attempt) * (0.5 + Math.random());
      // Not unref'd: the caller is awaiting the open, and the wait is bounded by busyTimeoutMs.
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, backoff)));
    }
  }
}

/**
 * Creates or upgrades the schema. The version is read first without a write lock, so opening an
 * up-to-date file takes none; an upgrade re-reads it under BEGIN IMMEDIATE, so racing processes
 * migrate once. `migrateSchema`'s flow, synchronously (better-sqlite3 is), with the meta table
 * made before the first read and a newer file refused at that read, before any lock.
 */
function migrate(db: SqliteDatabase, table: string): void {
  const sql = versionStatements(table);
  db.exec(metaTable(table));
  const read = (): readonly string[] => {
    const row = db.prepare(sql.readVersion).get() as { value: number } | undefined;
    return stepsToRun(`table "${table}"`, row?.value ?? 0, SCHEMA_VERSION, migrations(table));
  };
  if (read().length === 0) return;
  db.transaction(() => {
    const steps = read();
    for (const step of steps) db.exec(step);
    if (steps.length > 0) db.prepare(sql.writeVersion).run(SCHEMA_VERSION);
  }).immediate();
}
