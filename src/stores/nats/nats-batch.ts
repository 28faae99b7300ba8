import type { Lease } from '../../core/lease.js';
import { runInOrder } from '../../core/run-in-order.js';
import type { AcquireOutcome } from '../../core/store.js';
import { isRecordInvalid, type SentAnswer } from './nats-transitions.js';

/** How a batch makes one item's transition. */
export interface BatchTransition<T, R> {
  /**
   * Sends the transition's one-write form when it applies and answers through `done`
   * (`undefined`: it needs `full` after all); `false` when it does not apply.
   */
  send(item: T, done: SentAnswer<R>): boolean;
  /**
   * The whole transition, reads and retries included, within the deadline of an item that
   * started at `startedAt` (`performance.now()`), its one-write attempt included.
   */
  full(item: T, startedAt: number): Promise<R>;
}

/**
 * Runs `transition` for every item, at most `window` in flight, and answers in input order: the
 * batch form of `renew` / `release`, one conditional write per lease where this store knows its
 * last write of the grant, sent as answers free the window rather than one awaited call at a time.
 * Items of the same resource run one after another, in input order, so a lease listed twice is
 * answered as if the calls had been made one by one. After a failure no new item starts, and the
 * first error is thrown once the items in flight have settled (each has its own deadline).
 */
export function runBatch<T extends { readonly resource: string }, R>(
  items: readonly T[],
  window: number,
  transition: BatchTransition<T, R>,
): Promise<R[]> {
  return new Promise<R[]>((resolve, reject) => {
    const out = new Array<R>(items.length);
    /** Resources with an item in flight, and the later items of each waiting for it. */
    const busy = new Map<string, number[] | undefined>();
    let next = 0;
    let inFlight = 0;
    let failure: { error: unknown } | undefined;

    const finish = (i: number, error: unknown, result?: R): void => {
      inFlight--;
      if (error !== undefined) failure ??= { error };
      else out[i] = result!;
      const resource = items[i]!.resource;
      const later = busy.get(resource);
      if (failure === undefined && later?.length) start(later.shift()!);
      else busy.delete(resource);
      fill();
    };
    const full = (i: number, startedAt: number): void => {
      transition.full(items[i]!, startedAt).then(
        (result) => finish(i, undefined, result),
        (error: unknown) => finish(i, error ?? new Error('the transition failed')),
      );
    };
    const start = (i: number): void => {
      inFlight++;
      const startedAt = performance.now();
      const sent = transition.send(items[i]!, (error, result) => {
        if (error) finish(i, error);
        else if (result === undefined) full(i, startedAt);
        else finish(i, undefined, result);
      });
      if (!sent) full(i, startedAt);
    };
    const fill = (): void => {
      while (failure === undefined && inFlight < window && next < items.length) {
        const i = next++;
        const resource = items[i]!.resource;
        if (busy.has(resource)) {
          const later = busy.get(resource);
          if (later) later.push(i);
          else busy.set(resource, [i]);
          continue;
        }
        busy.set(resource, undefined);
        start(i);
      }
      if (inFlight > 0) return;
      if (failure !== undefined) reject(failure.error);
      else if (next === items.length) resolve(out);
    };
    fill();
  });
}

/**
 * The batch form of `acquire`: one compare-and-set per resource, `concurrency` in flight, answered
 * in input order. A record leasehold does not write fails the whole batch with `RECORD_INVALID`
 * once every resource has been tried, and the leases granted meanwhile are given back first
 * (`giveBack`; the records stay as they were; the others' tokens move).
 */
export async function acquireEach(
  resources: readonly string[],
  concurrency: number,
  acquire: (resource: string) => Promise<AcquireOutcome>,
  giveBack: (granted: readonly Lease[]) => Promise<unknown>,
): Promise<AcquireOutcome[]> {
  let invalid: unknown;
  const outcomes = await runInOrder(
    resources,
    (resource) => resource,
    concurrency,
    (resource) =>
      acquire(resource).catch((error: unknown): AcquireOutcome => {
        if (!isRecordInvalid(error)) throw error;
        invalid ??= error;
        return { resource, lease: null };
      }),
  );
  if (invalid === undefined) return outcomes;
  const granted = outcomes.flatMap((o) => (o.lease ? [o.lease] : []));
  if (granted.length > 0) await giveBack(granted);
  throw invalid;
}
