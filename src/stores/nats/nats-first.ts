import { isLive, type Lease, type LeaseRecord } from '../../core/lease.js';

/** Most candidates an acquireFirst looks at with a read each rather than a list. */
export const LOOK_BY_READS_MAX = 16;

/** What `acquireFirstByReads` runs on: the store's own single-lease calls and its clock. */
export interface FirstSteps {
  /** The single acquire of `resource`: the compare-and-set. */
  tryAcquire(resource: string): Promise<Lease | null>;
  /** One read of `resource`'s record. */
  read(resource: string): Promise<LeaseRecord | null>;
  /** The store's time as the caller can estimate it. */
  now(): number;
  /** How long past its `expiresAt` a record still counts as held. */
  readonly allowanceMs: number;
}

/**
 * `acquireFirst` over a few candidates (a counting lease's permits, at most `LOOK_BY_READS_MAX`):
 * the first candidate tried at once; when it is held, the others are looked at with one read
 * each, all in flight together, and those that look free tried in order. A `list` is one consumer
 * over the whole prefix, which on a bucket under steady writes runs to its deadline: not a look
 * for a hot path. Every grant is the compare-and-set.
 */
export async function acquireFirstByReads(
  resources: readonly string[],
  steps: FirstSteps,
): Promise<Lease | null> {
  const first = await steps.tryAcquire(resources[0]!);
  if (first || resources.length === 1) return first;
  const rest = resources.slice(1);
  // A failed read is only a look that could not be made: that candidate is tried anyway.
  const seen = await Promise.all(rest.map((r) => steps.read(r).catch(() => null)));
  const now = steps.now();
  for (const [i, resource] of rest.entries()) {
    const record = seen[i];
    if (record && isLive(record, now, steps.allowanceMs)) continue;
    const lease = await steps.tryAcquire(resource);
    if (lease) return lease;
  }
  return null;
}
