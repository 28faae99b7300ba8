import { invalidArgument } from '../core/errors.js';
import { raiseAfterFlush } from '../core/stdio.js';
import { checkInteger, checkKnownKeys, describe, LIMITS, optionKeys } from '../core/options.js';

/** How `stop()` winds the worker down. */
export interface StopOptions {
  /** How long, in ms, to wait for `onAcquired` work to settle before releasing anyway. @default 10000 */
  timeoutMs?: number;
}

const STOP_KEYS = optionKeys<StopOptions>({ timeoutMs: true });

/** Checks `stop()`'s options (throws `INVALID_ARGUMENT` naming the field); returns its `timeoutMs`. */
export function checkStopOptions(options: StopOptions): number {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('stop options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('stop options', options, STOP_KEYS);
  return checkInteger('timeoutMs', options.timeoutMs ?? 10_000, 0, LIMITS.ttlMaxMs);
}

/**
 * Keeps the process alive while a manager runs, as a listening server does: a timer that never
 * fires, held from `hold()` to `release()`, and let go of by `unref()` (the process may then exit
 * while the manager runs) until `ref()`.
 */
export class KeepAlive {
  private timer: NodeJS.Timeout | undefined;
  private refed = true;

  /** Keeps the process alive from now (unless `unref()` was called). */
  hold(): void {
    this.timer = setInterval(() => undefined, 1 << 30);
    if (!this.refed) this.timer.unref();
  }

  /** Stops keeping the process alive, for good. */
  release(): void {
    clearInterval(this.timer);
  }

  /** Lets the process exit while held. */
  unref(): void {
    this.refed = false;
    this.timer?.unref();
  }

  /** Undoes `unref()`. */
  ref(): void {
    this.refed = true;
    this.timer?.ref();
  }
}

/**
 * On the first of `signals`, removes these handlers and calls `stop`, lets stdout and stderr
 * drain (the last log lines of the stop would be lost otherwise), then raises the signal again so
 * it takes its usual course. Returns the uninstaller.
 */
export function onShutdownSignals(
  stop: () => Promise<void>,
  signals: readonly NodeJS.Signals[],
): () => void {
  const handlers = signals.map((signal) => {
    const handler = (): void => {
      uninstall();
      void stop().then(
        () => raiseAfterFlush(signal),
        (error: unknown) => raiseAfterFlush(signal, error),
      );
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  const uninstall = (): void => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
  return uninstall;
}
