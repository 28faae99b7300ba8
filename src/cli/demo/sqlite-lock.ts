import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { parseStoreUrl } from '../../core/store-url.js';

/** The file of a `sqlite:` store URL, or undefined for any other store. */
export function sqlitePath(url: string): string | undefined {
  const parsed = parseStoreUrl(url);
  if (parsed.scheme !== 'sqlite') return undefined;
  return parsed.rest.startsWith('//') ? decodeURIComponent(parsed.rest.slice(2)) : parsed.rest;
}

/**
 * Whether nobody is holding the write lock of each SQLite file for long: tries `BEGIN IMMEDIATE`
 * (without waiting) a few times per file and succeeds once per file. A running worker's transaction
 * lasts well under a millisecond, so a file that stays locked for all tries is held by a process that
 * was frozen mid-transaction, which would stall every other writer of that file until it resumes.
 */
export async function writeLocksFree(
  paths: readonly string[],
  tries = 12,
  gapMs = 3,
): Promise<boolean> {
  for (const path of paths) {
    const db = new Database(path, { timeout: 0 });
    try {
      let free = false;
      for (let i = 0; i < tries && !free; i++) {
        try {
          db.exec('BEGIN IMMEDIATE');
          db.exec('ROLLBACK');
          free = true;
        } catch {
          await sleep(gapMs);
        }
      }
      if (!free) return false;
    } finally {
      db.close();
    }
  }
  return true;
}
