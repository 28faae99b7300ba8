import { ErrorCode, LeaseError } from '../core/errors.js';
import type { Clock } from '../core/time.js';
import type { Wake } from './release-wake.js';

/** What an attempt of the waiting loop can come back with, besides a grant. */
export type NotGranted = 'held-by-other' | 'too-late';

/**
 * The waiting loop of `acquire` and `acquireAll`: attempts with jittered backoff (25 ms doubling,
 * at most a quarter of the TTL and 1 s, cut short by `wake`) until one is granted, `waitMs` runs
 * out (`LEASE_UNAVAILABLE`, naming `what`) or `signal` aborts (its reason). A grant that arrives
 * after the abort is given back. With `behind` true at the start (waiters of this process already
 * asleep on the name), the first attempt is skipped: a release wakes them first.
 */
export async function waitForGrant<T>(
  timing: { readonly clock: Clock; readonly ttlMs: number },
  what: string,
  resource: string | undefined,
  waitMs: number,
  signal: AbortSignal | undefined,
  tryOnce: () => Promise<T | NotGranted>,
  giveBack: (granted: T) => Promise<void>,
  wake: (since: number) => Wake,
  behind?: () => boolean,
): Promise<T> {
  const { clock, ttlMs } = timing;
  const deadline = clock.monotonic() + waitMs;
  const maxDelay = Math.min(1000, Math.max(25, Math.floor(ttlMs / 4)));
  let woke: Wake | undefined;
  for (let attempt = 0; ; attempt++) {
    signal?.throwIfAborted();
    const sent = clock.monotonic();
    woke?.attempted?.();
    // Waiters of this process already asleep on the name: a release wakes them first, so a
    // first attempt now would only be refused; take a place behind them instead.
    const outcome =
      attempt === 0 && waitMs > 0 && behind?.() === true ? 'held-by-other' : await tryOnce();
    const granted = typeof outcome === 'string' ? null : outcome;
    if (granted && signal?.aborted) {
      await giveBack(granted); // aborted while the store was answering
      signal.throwIfAborted();
    }
    if (granted) return granted;
    const left = deadline - clock.monotonic();
    if (left <= 0) {
      const waited = waitMs > 0 ? ` (waited ${waitMs} ms)` : '';
      const why =
        outcome === 'too-late'
          ? `was granted, but the store answered after its validity deadline, so it was given back${waited}: a longer ttlMs leaves more room for the store's latency`
          : `is held by another owner${waited}`;
      throw new LeaseError(ErrorCode.LEASE_UNAVAILABLE, `${what} ${why}`, {
        resource,
        retryable: true,
      });
    }
    const backoff = Math.min(maxDelay, 25 * 2 ** Math.min(attempt, 10));
    const delay = Math.min(left, Math.round(backoff * (0.5 + Math.random() * 0.5)));
    woke = wake(sent);
    await woke.sleep(clock, delay, signal);
  }
}
