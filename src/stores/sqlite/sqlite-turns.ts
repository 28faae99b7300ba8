/** How long steps may follow each other in one macrotask before the event loop gets a turn. */
const SLICE_MS = 3;

/**
 * One step at a time on a connection. A step that must wait for another connection's lock keeps
 * its turn (the steps behind it would only find the lock taken too), so a locked file costs one
 * attempt per pause, not one per waiting call. Urgent steps (keeping or giving up what is held:
 * renewals and releases) go before the others, each kind in the order asked: a renewal never waits
 * behind a queue of bulk acquisitions. Steps queued behind each other run back to back for up to
 * `SLICE_MS`; then the turn is handed on in a later event-loop turn, so timers (a lease's deadline)
 * run in between.
 */
export class Turns {
  private taken = false;
  private readonly urgent: (() => void)[] = [];
  private readonly waiting: (() => void)[] = [];
  /** When the current holder's slice began (`performance.now()`): when it took a free turn, or was handed one late. */
  sliceStart = 0;

  /** `undefined` when the turn was free and is now taken; else resolves when it is handed over. */
  take(urgent = false): Promise<void> | undefined {
    if (!this.taken) {
      this.taken = true;
      this.sliceStart = performance.now();
      return undefined;
    }
    return new Promise((resolve) => (urgent ? this.urgent : this.waiting).push(resolve));
  }

  give(): void {
    const next = this.urgent.shift() ?? this.waiting.shift();
    if (!next) {
      this.taken = false;
    } else if (performance.now() - this.sliceStart < SLICE_MS) {
      next();
    } else {
      setImmediate(() => {
        this.sliceStart = performance.now();
        next();
      });
    }
  }
}
