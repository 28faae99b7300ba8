import { ErrorCode, LeaseError } from './errors.js';
import { systemClock, type Clock } from './time.js';

export interface DeadlineOptions<T> {
  /** Where the deadline is measured. @default the system clock (the timer never keeps a process alive) */
  clock?: Clock;
  /** Receives a value that arrives after the deadline, so it can be cleaned up (a connection, say). */
  onLate?: (value: T) => void;
}

/**
 * Settles like `promise`, or rejects with `timeoutError()` once `ms` have passed, whichever comes
 * first. The call behind `promise` is not cancelled: a write that timed out may still land.
 */
export function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  timeoutError: () => unknown,
  options: DeadlineOptions<T> = {},
): Promise<T> {
  const clock = options.clock ?? systemClock;
  return new Promise<T>((resolve, reject) => {
    let expired = false;
    const timer = clock.setTimeout(() => {
      expired = true;
      reject(timeoutError());
    }, ms);
    promise.then(
      (value) => {
        if (expired) return options.onLate?.(value);
        timer.clear();
        resolve(value);
      },
      (error: unknown) => {
        if (expired) return;
        timer.clear();
        reject(error);
      },
    );
  });
}

/** The `STORE_UNAVAILABLE` error for a call that got no answer in time. */
export function noAnswer(what: string, ms: number): LeaseError {
  return new LeaseError(ErrorCode.STORE_UNAVAILABLE, `${what} got no answer within ${ms} ms`);
}
