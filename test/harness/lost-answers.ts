import { ErrorCode, LeaseError, type LeaseStore } from '../../src/index.js';

/** The contract's calls whose answer can be lost after the store applied them. */
export type AnsweredCall =
  'tryAcquire' | 'renew' | 'release' | 'acquireMany' | 'renewMany' | 'releaseMany';

/**
 * `store` as a caller sees it when an answer is lost on the way back: after `lose(call)`, the next
 * `call` runs against the store and is applied there, then fails with a retryable
 * `STORE_UNAVAILABLE` as a timed-out call does. What the store applied is kept in `applied`, for
 * the test to compare with what happens when the caller tries again.
 */
export function losingAnswers(store: LeaseStore): {
  store: LeaseStore;
  lose(call: AnsweredCall): void;
  readonly applied: unknown[];
} {
  const pending = new Set<string>();
  const calls = new Set<string>([
    'tryAcquire',
    'renew',
    'release',
    'acquireMany',
    'renewMany',
    'releaseMany',
  ]);
  const applied: unknown[] = [];
  const wrapped = new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      const name = String(property);
      if (typeof value !== 'function') return value;
      if (!calls.has(name)) return (value as (...a: unknown[]) => unknown).bind(target);
      return async (...args: unknown[]): Promise<unknown> => {
        const answer: unknown = await (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!pending.delete(name)) return answer;
        applied.push(answer);
        throw new LeaseError(ErrorCode.STORE_UNAVAILABLE, `${name}: the answer was lost`, {
          retryable: true,
        });
      };
    },
  });
  return { store: wrapped, lose: (call) => void pending.add(call), applied };
}
