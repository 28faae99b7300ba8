import type { WatchListener } from '../../core/store.js';
import type { Clock, TimerHandle } from '../../core/time.js';
import type { SqliteStatement } from './sqlite-driver.js';
import { isBusy } from './sqlite-errors.js';

export interface ReleaseWatchOptions {
  /** Statements on the store's own connection (see `eventStatements`). */
  readonly sql: {
    readonly dataVersion: SqliteStatement;
    readonly lastSeq: SqliteStatement;
    readonly eventsAfter: SqliteStatement;
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
        // Starts from the end of the log: only releases from now on are reported.
        this.version = this.readVersion();
        const row = this.options.sql.lastSeq.get() as { seq: number | null };
        this.lastSeq = row.seq ?? 0;
      } else {
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
