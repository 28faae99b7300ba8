import { withDeadline } from '../../core/deadline.js';
import { noAnswer } from './nats-errors.js';

/**
 * One transition of one resource within `timeoutMs`, its reads and retries included, counted
 * from `startedAt` (`performance.now()`) when a batch's one-write attempt came first.
 */
export type Bounded = <T>(
  operation: string,
  fn: () => Promise<T>,
  startedAt?: number,
) => Promise<T>;

/**
 * The deadline of a store's calls on `bucket`: a call with no answer in time fails with a
 * retryable `STORE_UNAVAILABLE` (see `noAnswer`), though a write it sent may still take effect.
 */
export function callDeadline(bucket: string, timeoutMs: number): Bounded {
  return (operation, fn, startedAt = performance.now()) => {
    const left = Math.max(0, startedAt + timeoutMs - performance.now());
    return withDeadline(fn(), left, () => noAnswer(operation, bucket, timeoutMs));
  };
}
