import type { LeaseStore } from '../core/store.js';
import { sleep, type Clock, type TimerHandle } from '../core/time.js';

/** How a waiting `acquire()` sleeps between attempts. */
export interface Wake {
  /** Like `sleep(clock, ms, signal)`, but may end early. */
  sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void>;
  /** Told that the waiter is trying again (after a sleep): a wake it got is spent. */
  attempted?(): void;
  /** Ends whatever the wake subscribed to. */
  close(): void;
}

/**
 * `sleep(clock, ms, signal)` that can also be ended early: `hold` is given the function that ends
 * it while it sleeps, and `undefined` once it is over (woken, timed out or aborted).
 */
export function wakeableSleep(
  clock: Clock,
  ms: number,
  signal: AbortSignal | undefined,
  hold: (wakeUp: (() => void) | undefined) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const finish = (): void => {
      timer.clear();
      signal?.removeEventListener('abort', onAbort);
      hold(undefined);
    };
    const onAbort = (): void => {
      finish();
      reject(signal?.reason);
    };
    const wakeUp = (): void => {
      finish();
      resolve();
    };
    hold(wakeUp);
    const timer: TimerHandle = clock.setTimeout(wakeUp, ms, { keepAlive: true });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The plain backoff, for a store that announces nothing. */
const NO_WAKE: Wake = { sleep, close: () => {} };

/**
 * Cuts a waiting `acquire()`'s backoff short when the store announces that the resource was
 * released or removed on expiry, so the waiter tries again at once instead of up to a backoff
 * later. A hint only: the compare-and-set decides, and the backoff still runs, for stores that
 * announce nothing (most announce no expiry) and for a notice that was lost.
 *
 * A release can land between a refused attempt and the moment the subscription is in place: the
 * first sleep after the store says its subscription is live ends at once, so that attempt is made
 * again with nothing missed. (A store that does not say when it is live is taken as live at once.)
 */
export class ReleaseWake implements Wake {
  /** A notice came since the last sleep began, or the subscription just went live. */
  private pending = false;
  private wakeUp: (() => void) | undefined;
  private readonly unwatch: () => void;

  private constructor(store: LeaseStore, prefix: string, matches: (resource: string) => boolean) {
    this.unwatch = store.watch!(prefix, (event) => {
      if (event.type === 'acquired' || !matches(event.resource)) return;
      this.poke();
    });
    const ready = (this.unwatch as { ready?: unknown }).ready;
    if (ready instanceof Promise)
      ready.then(
        () => this.poke(),
        () => {},
      );
  }

  /**
   * A wake for `resource` (or, with `matches`, for any record under `resource` it accepts: the
   * permits of a name), or the plain backoff when the store cannot announce releases.
   */
  static for(
    store: LeaseStore,
    resource: string,
    matches: (resource: string) => boolean = (r) => r === resource,
  ): Wake {
    if (!store.capabilities.watch || typeof store.watch !== 'function') return NO_WAKE;
    try {
      return new ReleaseWake(store, resource, matches);
    } catch {
      return NO_WAKE; // a store that refuses to watch now (closing, say): the backoff alone
    }
  }

  /** Like `sleep(clock, ms, signal)`, but ends as soon as a release of the resource is announced. */
  sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return wakeableSleep(clock, ms, signal, (wakeUp) => {
      this.wakeUp = wakeUp;
      if (!wakeUp) this.pending = false;
    });
  }

  /** Ends the subscription. */
  close(): void {
    this.wakeUp = undefined;
    this.unwatch();
  }

  private poke(): void {
    if (this.wakeUp) this.wakeUp();
    else this.pending = true;
  }
}
