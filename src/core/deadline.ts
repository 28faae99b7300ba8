import { ErrorCode, LeaseError } from './errors.js';
import type { Clock } from './time.js';

/** Rejects with `STORE_UNAVAILABLE` if `promise` has not settled within `ms` on `clock`. */
export function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  clock: Clock,
  what: string,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = clock.setTimeout(
      () =>
        reject(
          new LeaseError(ErrorCode.STORE_UNAVAILABLE, `${what} got no answer within ${ms} ms`),
        ),
      ms,
    );
    promise.then(
      (value) => {
        timer.clear();
        resolve(value);
      },
      (error: unknown) => {
        timer.clear();
        reject(error);
      },
    );
  });
}
