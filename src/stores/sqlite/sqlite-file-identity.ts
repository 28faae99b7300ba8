import { statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { fileReplacedError, isFileGone } from './sqlite-errors.js';

/** How stale the last look at the path may be when a call starts: one `stat` per this at most. */
export const FILE_CHECK_MS = 100;

/** The part of better-sqlite3's `Database` that tells which file it opened. */
interface NamedDatabase {
  readonly name?: unknown;
  readonly memory?: unknown;
}

/**
 * Notices when the store's file is deleted or replaced under it (`rm`, a restored backup renamed
 * over it). The connection would go on reading and writing the old, unlinked file while another
 * process opened a fresh one at the same path and granted the same resources again from token 1.
 * The path's device and inode are taken when the store opens and compared, asynchronously, before
 * calls; once they differ (or the path is gone) every call fails, for good.
 */
export class FileIdentity {
  private checkedAt = -Infinity;
  private pending: Promise<void> | undefined;
  private gone = false;
  /** Why the last look at the path failed (not "the file is gone"), until one succeeds. */
  private failure: LeaseError | undefined;

  private constructor(
    readonly path: string,
    private readonly dev: number,
    private readonly ino: number,
  ) {}

  /** The file `db` has open, as its path names it now; `undefined` for in-memory and temporary databases. */
  static of(db: NamedDatabase): FileIdentity | undefined {
    const { name } = db;
    if (typeof name !== 'string' || db.memory === true || name === '' || name === ':memory:')
      return undefined;
    const path = resolve(name);
    try {
      const { dev, ino } = statSync(path);
      return new FileIdentity(path, dev, ino);
    } catch {
      return undefined;
    }
  }

  /**
   * Throws once the file is known to be gone. `undefined` when the path was seen naming the file
   * within the last `FILE_CHECK_MS`; else a promise that settles once it has been looked at since
   * `askedAt`. The next look starts halfway through that window, so a steady stream of calls rarely
   * waits.
   */
  confirm(operation: string, askedAt = performance.now()): Promise<void> | undefined {
    if (this.gone) throw fileReplacedError(operation, this.path);
    const age = performance.now() - this.checkedAt;
    if (age >= FILE_CHECK_MS / 2)
      this.pending ??= this.look().finally(() => (this.pending = undefined));
    if (age < FILE_CHECK_MS || this.checkedAt >= askedAt) return undefined;
    // The look under way may have begun before this call: then the next one is waited for too.
    return this.pending!.then(() => {
      if (this.failure) throw this.failure;
      return this.confirm(operation, askedAt);
    });
  }

  /** For callers that cannot wait: throws once the file is known to be gone, and looks again when due. */
  peek(operation: string): void {
    this.confirm(operation)?.catch(() => {});
  }

  /** Never rejects: the outcome is left in `gone`, `failure` and `checkedAt`. */
  private async look(): Promise<void> {
    const startedAt = performance.now();
    try {
      const { dev, ino } = await stat(this.path);
      if (dev !== this.dev || ino !== this.ino) this.gone = true;
    } catch (error) {
      if (isFileGone(error)) {
        this.gone = true;
      } else {
        this.failure = new LeaseError(
          ErrorCode.STORE_UNAVAILABLE,
          `cannot check the SQLite file ${JSON.stringify(this.path)}: ${(error as Error).message}`,
          { cause: error },
        );
        return;
      }
    }
    this.failure = undefined;
    this.checkedAt = startedAt;
  }
}
