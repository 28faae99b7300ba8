import { retryAfterBusy } from './sqlite-busy.js';
import { isBusy, lockedError } from './sqlite-errors.js';
import type { FileIdentity } from './sqlite-file-identity.js';
import { yieldToLoop } from '../../core/time.js';
import { Turns } from './sqlite-turns.js';

/**
 * Rows per transaction in a batch of acquisitions. Measured on a loaded 2-core machine, 500 take
 * 2–4 ms in one transaction (2,000 held the event loop 40–47 ms), so a chunk stays well under the
 * ~20 ms a single synchronous step may take.
 */
export const BATCH_ROWS = 500;

/**
 * Rows per transaction in a batch of renewals or releases: cheaper rows (an update by key), and the
 * batch every holder sends at every beat. Each transaction is one lock acquisition and, at the
 * default `synchronous=FULL`, one fsync of the log: with 20 processes renewing 2,500 leases each
 * every 2 s on one file (2 cores), chunks of 500 (five commits per renewal) left renewals waiting
 * out the busy timeout and the fleet lapsed, while chunks of 1,000 converged with nothing lost.
 * A renewMany of 10,000 in chunks of 1,000 held the loop 11–27 ms at most (bench stalls section).
 */
export const RENEW_ROWS = 1000;

/** Operations that keep or give up what is held: they go before bulk work (see `Turns`). */
export const URGENT = new Set(['renew', 'renewMany', 'release', 'releaseMany']);

export interface RunnerOptions {
  /** How long a step may wait for another connection's lock before its call fails. */
  readonly busyTimeoutMs: number;
  /** The file's identity, checked before calls; `undefined` for in-memory databases. */
  readonly identity: FileIdentity | undefined;
}

/**
 * How every SQLite call runs without holding the event loop (design rule 6): better-sqlite3 is
 * synchronous, so each call is cut into steps (one transaction, or one read) that each hold the
 * loop for a few milliseconds at most. Steps take turns on the connection, a busy file is waited for
 * asynchronously (`retryAfterBusy`), and batches go in chunks of `BATCH_ROWS` with the event loop
 * free in between.
 */
export class SqliteRunner {
  private readonly turns = new Turns();
  /**
   * When steps started finding the file locked, while they still do: a step that waited in turn
   * behind one that was waiting for the lock has waited for the lock too.
   */
  private lockedSince: number | undefined;

  constructor(private readonly options: RunnerOptions) {}

  /**
   * `attempt` as one step, once the file is confirmed and it is this call's turn. `operation` names
   * the call in errors; renewals and releases are `urgent` (they go first) unless told otherwise.
   */
  run<T>(operation: string, attempt: () => T, urgent = URGENT.has(operation)): Promise<T> {
    let checking: Promise<void> | undefined;
    try {
      checking = this.options.identity?.confirm(operation);
    } catch (error) {
      return Promise.reject(error); // the file is gone: a rejection, as from every later step
    }
    if (checking) return checking.then(() => this.step(operation, attempt, urgent));
    return this.step(operation, attempt, urgent);
  }

  /**
   * `attempt` over `items` in chunks of at most `rows` (or as many as `rows(left)` says, asked
   * before each chunk), one step (so one transaction) each,
   * letting the event loop run between chunks; the results are concatenated in input order. A
   * batch fails only when one chunk found the file locked for `busyTimeoutMs`; the chunks before it
   * have committed by then.
   */
  async runChunked<I, R>(
    operation: string,
    items: readonly I[],
    attempt: (chunk: readonly I[]) => R[],
    rows: number | ((left: number) => number) = BATCH_ROWS,
  ): Promise<R[]> {
    const results: R[] = [];
    for (let start = 0, size = 0; start < items.length; start += size) {
      if (start > 0) await yieldToLoop();
      const checking = this.options.identity?.confirm(operation);
      if (checking) await checking;
      size = typeof rows === 'number' ? rows : rows(items.length - start);
      const chunk = items.slice(start, start + size);
      const step = this.step(operation, () => attempt(chunk), URGENT.has(operation));
      for (const result of await step) results.push(result);
    }
    return results;
  }

  /**
   * Waits for the turn and runs `attempt`, retrying while the file is busy, until it has waited
   * `busyTimeoutMs` for the lock: counted from the later of its own start and the moment steps
   * began finding the file locked. So a step queued behind one that waited for the lock counts
   * that wait too (once the first gives up, those behind it get one more attempt each), while
   * time spent behind steps that were simply working counts for nothing.
   */
  private step<T>(operation: string, attempt: () => T, urgent: boolean): Promise<T> {
    const queued = this.turns.take(urgent);
    // A free turn was taken just now, at the start of its slice: no second reading of the clock.
    if (!queued) return this.inTurn(operation, attempt, this.turns.sliceStart);
    const since = performance.now();
    return queued.then(() => this.inTurn(operation, attempt, since));
  }

  /**
   * `step` once it holds the turn, which it gives back when settled. The first attempt, which
   * nearly always answers, runs at once and gives the turn back in the same synchronous step, so
   * a call on a free connection pays for no promise chain of its own. Measured on a disk-backed
   * file (an fsync per commit), in one process alternating with the build before: 4–6 µs less per
   * acquire→release cycle of ~380 µs (4 runs of 8,000 cycles), below what the bench's rounds resolve.
   */
  private inTurn<T>(operation: string, attempt: () => T, since: number): Promise<T> {
    let result: T;
    try {
      result = attempt();
    } catch (error) {
      if (isBusy(error)) return this.waitOutLock(operation, attempt, since, error);
      // Any other failure got past the lock: the steps behind start counting afresh.
      this.lockedSince = undefined;
      this.turns.give();
      return Promise.reject(error);
    }
    this.lockedSince = undefined;
    this.turns.give();
    return Promise.resolve(result);
  }

  /** `inTurn` after its first attempt found the file locked (`first`): retried until `busyTimeoutMs`. */
  private waitOutLock<T>(
    operation: string,
    attempt: () => T,
    since: number,
    first: unknown,
  ): Promise<T> {
    const { busyTimeoutMs } = this.options;
    // Asked after a busy attempt only, so the file is locked now.
    const waitingSince = (): number => Math.max(since, (this.lockedSince ??= performance.now()));
    let gaveUp = false;
    return retryAfterBusy(
      attempt,
      () => waitingSince() + busyTimeoutMs,
      (error) => {
        gaveUp = true;
        return lockedError(operation, performance.now() - waitingSince(), busyTimeoutMs, error);
      },
      first,
    ).then(
      (result) => {
        this.lockedSince = undefined;
        this.turns.give();
        return result;
      },
      (error: unknown) => {
        if (!gaveUp) this.lockedSince = undefined;
        this.turns.give();
        throw error;
      },
    );
  }
}
