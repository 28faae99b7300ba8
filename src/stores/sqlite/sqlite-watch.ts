import { randomUUID } from 'node:crypto';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { StoreWatch } from '../../core/store-watch.js';
import type { WatchErrorHandler } from '../../core/watch-hub.js';
import type { Clock, TimerHandle } from '../../core/time.js';
import type { SqliteStatement } from './sqlite-driver.js';
import { isBusy } from './sqlite-errors.js';
import { WATCHER_REFRESH_MS, WATCHER_STALE_MS } from './sqlite-ops.js';

export interface ReleaseWatchOptions {
  /** Statements on the store's own connection (see `eventStatements`). */
  readonly sql: {
    readonly dataVersion: SqliteStatement;
    readonly lastSeq: SqliteStatement;
    readonly eventsAfter: SqliteStatement;
    readonly register: SqliteStatement;
    readonly refresh: SqliteStatement;
    readonly prune: SqliteStatement;
    readonly unregister: SqliteStatement;
  };
  readonly pollMs: number;
  /** A poll that finds the file locked is not reported until it has stayed locked this long. */
  readonly busyTimeoutMs: number;
  /** Throws when the store's file is known to be deleted or replaced (reported as a failed poll). */
  readonly checkFile: () => void;
  /** Schedules the polls (background timers: they never keep the process alive). */
  readonly clock: Clock;
  /** Told the first failed poll of a run of them (polling goes on), and a watchers row found gone. */
  readonly onError: WatchErrorHandler;
  /** The store's error mapping, `during` saying what failed. */
  readonly mapError: (error: unknown, during: string) => LeaseError;
}

/** Log entries read per step; a longer backlog is read in several steps, yielding in between. */
const CHUNK = 1000;

/**
 * Release notifications from the file's release log. While anyone listens, the connection checks
 * `PRAGMA data_version` every `pollMs` (it changes when another connection commits) and reads the
 * log past the last entry seen only when it did. This connection's own releases do not change
 * that counter, so the store calls `poke()` after them and they are delivered at once.
 *
 * Releases are logged only while the watchers table has a row, so a file nobody watches pays
 * nothing for the log. A watching store writes its row before it reads where the log ends (every
 * release committed after that is logged), marks it every `WATCHER_REFRESH_MS`, deletes rows
 * nobody marked for `WATCHER_STALE_MS` (left by a process that died), and deletes its own when its
 * last listener goes. A store whose own row was deleted meanwhile (its process was stopped that
 * long) writes it again and reports that releases in between may have gone unreported.
 */
export class ReleaseWatch extends StoreWatch {
  private timer: TimerHandle | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private version = 0;
  /** The last log entry seen; `undefined` until the starting point is read. */
  private lastSeq: number | undefined;
  /** What the last poll failed with, while polls fail. */
  private failure: LeaseError | undefined;
  /** When polls started finding the file locked (`performance.now()`), while they do. */
  private busySince: number | undefined;
  /** Bumped by `stop`, so a delivery loop that a listener's unsubscribe ended stops too. */
  private generation = 0;
  /** This store's row in the watchers table. */
  private readonly id = randomUUID();
  /** When the row was last written or marked (the clock's `now()`); `undefined` while it is not there. */
  private markedAt: number | undefined;

  constructor(private readonly options: ReleaseWatchOptions) {
    super(options.onError);
  }

  /**
   * The first poll runs at once, so a listener's `ready` is settled when `add` returns: resolved
   * when this store's row is in the watchers table, rejected while polls fail (polling goes on).
   */
  added({ first }: { first: boolean }): Promise<void> {
    if (first) this.poll(false);
    return this.lastSeq !== undefined
      ? Promise.resolve()
      : Promise.reject(this.failure ?? this.options.mapError(new Error('not polling'), 'watch'));
  }

  removed({ last }: { last: boolean }): void {
    if (last) this.stop();
  }

  /** Reads the log soon without waiting for the counter: this connection just released. */
  poke(): void {
    if (!this.hub.active || this.immediate) return;
    this.immediate = setImmediate(() => {
      this.immediate = undefined;
      this.poll(true);
    });
    this.immediate.unref();
  }

  protected doStop(): void {
    if (this.markedAt !== undefined) {
      this.markedAt = undefined;
      try {
        this.options.sql.unregister.run(this.id);
      } catch {
        // A locked file: the row stays until a watcher finds it stale, and costs a log entry per
        // release meanwhile.
      }
    }
    this.timer?.clear();
    clearImmediate(this.immediate);
    this.timer = this.immediate = undefined;
    this.lastSeq = undefined;
    this.generation++;
  }

  private poll(force: boolean): void {
    if (!this.hub.active) return;
    const generation = this.generation;
    let more = false;
    try {
      this.options.checkFile();
      if (this.lastSeq === undefined) {
        // Registers first, then starts from the end of the log: every release that commits after
        // the start is logged and reported.
        this.register();
        this.version = this.readVersion();
        const row = this.options.sql.lastSeq.get() as { seq: number | null };
        this.lastSeq = row.seq ?? 0;
      } else {
        this.markIfDue();
        const version = this.readVersion();
        if (force || version !== this.version) {
          more = this.readLog(this.lastSeq, generation);
          this.version = version;
        }
      }
      this.failure = undefined;
      this.hub.recovered();
      this.busySince = undefined;
    } catch (error) {
      // A poll blocks for a few milliseconds at most on a locked file; the next one tries again,
      // and only a lock held past busyTimeoutMs is worth a report.
      const now = performance.now();
      if (isBusy(error)) this.busySince ??= now;
      else this.busySince = undefined;
      const tolerated =
        this.busySince !== undefined && now - this.busySince < this.options.busyTimeoutMs;
      if (!tolerated) {
        this.failure = this.options.mapError(error, 'watch (reading the release log; retrying)');
        this.hub.failed(this.failure);
      }
    }
    if (generation !== this.generation) return;
    if (more) this.poke();
    else this.schedule();
  }

  /** Writes (or marks) this store's row in the watchers table, and deletes rows left stale. */
  private register(): void {
    const now = this.options.clock.now();
    this.options.sql.register.run(this.id, now);
    this.markedAt = now;
    this.pruneStale(now);
  }

  /**
   * Marks the row when it is due. A locked file is tried again at the next poll; a row found gone
   * is written again, with a report that releases may have been missed.
   */
  private markIfDue(): void {
    const now = this.options.clock.now();
    if (this.markedAt !== undefined && now - this.markedAt < WATCHER_REFRESH_MS) return;
    try {
      if (this.options.sql.refresh.run(now, this.id).changes === 0) {
        this.register();
        this.options.onError(
          new LeaseError(
            ErrorCode.STORE_UNAVAILABLE,
            `this store's row in the watchers table was gone (unmarked for over ${WATCHER_STALE_MS / 1000} s: was the process stopped?), so releases by other connections meanwhile may not have been reported`,
          ),
        );
        return;
      }
      this.markedAt = now;
      this.pruneStale(now);
    } catch (error) {
      if (!isBusy(error)) throw error;
    }
  }

  private pruneStale(now: number): void {
    try {
      this.options.sql.prune.run(now - WATCHER_STALE_MS);
    } catch (error) {
      if (!isBusy(error)) throw error; // done at a later mark
    }
  }

  private readVersion(): number {
    return (this.options.sql.dataVersion.get() as { data_version: number }).data_version;
  }

  /** Delivers the entries after `after`; true when there may be more. */
  private readLog(after: number, generation: number): boolean {
    const rows = this.options.sql.eventsAfter.all(after, CHUNK) as {
      seq: number;
      resource: string;
    }[];
    for (const { seq, resource } of rows) {
      if (generation !== this.generation) return false;
      this.lastSeq = seq;
      this.hub.deliver({ type: 'released', resource });
    }
    return rows.length === CHUNK;
  }

  private schedule(): void {
    if (!this.hub.active) return;
    this.timer?.clear();
    this.timer = this.options.clock.setTimeout(() => {
      this.timer = undefined;
      this.poll(false);
    }, this.options.pollMs);
  }
}
