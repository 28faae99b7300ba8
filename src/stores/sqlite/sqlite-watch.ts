import { randomUUID } from 'node:crypto';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { WatchListener } from '../../core/store.js';
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
  /** The first failed poll of a run of them (polling goes on). */
  readonly onPollError: (error: unknown) => void;
  /** A listener threw (the others are still called). */
  readonly onListenerError: (error: unknown) => void;
}

interface Subscription {
  readonly prefix: string;
  readonly listener: WatchListener;
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
export class ReleaseWatch {
  private readonly subscriptions = new Set<Subscription>();
  private timer: TimerHandle | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private version = 0;
  /** The last log entry seen; `undefined` until the starting point is read. */
  private lastSeq: number | undefined;
  /** The last poll failed: one report per run of failures, not one per poll. */
  private failing = false;
  /** When polls started finding the file locked (`performance.now()`), while they do. */
  private busySince: number | undefined;
  /** Bumped by `stop`, so a delivery loop that a listener's unsubscribe ended stops too. */
  private generation = 0;
  /** This store's row in the watchers table. */
  private readonly id = randomUUID();
  /** When the row was last written or marked (the clock's `now()`); `undefined` while it is not there. */
  private markedAt: number | undefined;

  constructor(private readonly options: ReleaseWatchOptions) {}

  add(prefix: string, listener: WatchListener): () => void {
    const subscription = { prefix, listener };
    const first = this.subscriptions.size === 0;
    this.subscriptions.add(subscription);
    if (first) this.poll(false);
    return () => {
      if (this.subscriptions.delete(subscription) && this.subscriptions.size === 0) this.stop();
    };
  }

  /** Reads the log soon without waiting for the counter: this connection just released. */
  poke(): void {
    if (this.subscriptions.size === 0 || this.immediate) return;
    this.immediate = setImmediate(() => {
      this.immediate = undefined;
      this.poll(true);
    });
    this.immediate.unref();
  }

  stop(): void {
    if (this.markedAt !== undefined) {
      this.markedAt = undefined;
      try {
        this.options.sql.unregister.run(this.id);
      } catch {
        // A locked file: the row stays until a watcher finds it stale, and costs a log entry per
        // release meanwhile.
      }
    }
    this.subscriptions.clear();
    this.timer?.clear();
    clearImmediate(this.immediate);
    this.timer = this.immediate = undefined;
    this.lastSeq = undefined;
    this.generation++;
  }

  private poll(force: boolean): void {
    if (this.subscriptions.size === 0) return;
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
      this.failing = false;
      this.busySince = undefined;
    } catch (error) {
      // A poll blocks for a few milliseconds at most on a locked file; the next one tries again,
      // and only a lock held past busyTimeoutMs is worth a report.
      const now = performance.now();
      if (isBusy(error)) this.busySince ??= now;
      else this.busySince = undefined;
      const tolerated =
        this.busySince !== undefined && now - this.busySince < this.options.busyTimeoutMs;
      if (!this.failing && !tolerated) {
        this.options.onPollError(error);
        this.failing = true;
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
        this.options.onPollError(
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
      for (const { prefix, listener } of [...this.subscriptions]) {
        if (!resource.startsWith(prefix)) continue;
        try {
          listener({ type: 'released', resource });
        } catch (error) {
          this.options.onListenerError(error);
        }
      }
    }
    return rows.length === CHUNK;
  }

  private schedule(): void {
    if (this.subscriptions.size === 0) return;
    this.timer?.clear();
    this.timer = this.options.clock.setTimeout(() => {
      this.timer = undefined;
      this.poll(false);
    }, this.options.pollMs);
  }
}
