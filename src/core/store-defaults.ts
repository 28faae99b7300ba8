import type { Lease, LeaseRecord, LeaseRef } from './lease.js';
import { isLive } from './lease.js';
import { LeaseError } from './errors.js';
import { LIMITS } from './options.js';

/** @internal The single-resource operations the default group and permit forms are built from. */
export interface SingleOps {
  tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null>;
  releaseMany(leases: readonly LeaseRef[]): Promise<boolean[]>;
  list(prefix: string, limit: number, after: string): Promise<LeaseRecord[]>;
  /** The caller's estimate of the store's time, to tell which records look free. */
  now(): number;
  /** What a contender allows past `expiresAt` before a record counts as free. */
  allowanceMs: number;
}

/**
 * All of `resources` or none, for a store without multi-record transactions: the members are
 * taken one by one in resource order (the same global order for every caller, so two groups over
 * overlapping sets in crossing orders meet at their first shared member, and the one refused there
 * holds nothing of the other's), and on the first refusal what was taken is given back in one
 * `releaseMany` before `null` is returned. Nobody ever waits while holding a member, so groups
 * cannot deadlock. Leases come back in input order; a failed call gives back what it took, then
 * throws.
 */
export async function acquireInOrder(
  ops: SingleOps,
  resources: readonly string[],
  owner: string,
  ttlMs: number,
  compare: (a: string, b: string) => number,
): Promise<Lease[] | null> {
  const ordered = [...resources].sort(compare);
  const taken = new Map<string, Lease>();
  try {
    for (const resource of ordered) {
      const lease = await ops.tryAcquire(resource, owner, ttlMs);
      if (!lease) break;
      taken.set(resource, lease);
    }
  } catch (error) {
    await giveBack(ops, taken);
    throw error;
  }
  if (taken.size === resources.length) return resources.map((r) => taken.get(r)!);
  await giveBack(ops, taken);
  return null;
}

/** Releases what a refused group had taken; if that fails the members lapse at their TTL, and the failure is thrown. */
async function giveBack(ops: SingleOps, taken: ReadonlyMap<string, Lease>): Promise<void> {
  if (taken.size > 0) await ops.releaseMany([...taken.values()]);
}

/**
 * The first free resource of `resources`, for a store that cannot choose among records in one
 * call: the first candidate is tried at once (one round trip when it is free, the common case when
 * callers start at different candidates); when it is held, the others' records are read with one
 * `list` page and only those that look free (released, expired by `now()`, or never written) are
 * tried, in order. `null` when none could be taken. Looking is advice: every grant is the store's
 * own compare-and-set.
 */
export async function acquireFirstByList(
  ops: SingleOps,
  resources: readonly string[],
  owner: string,
  ttlMs: number,
): Promise<Lease | null> {
  const first = await ops.tryAcquire(resources[0]!, owner, ttlMs);
  if (first || resources.length === 1) return first;
  const rest = resources.slice(1);
  const prefix = commonPrefix(rest);
  const limit = Math.min(LIMITS.listMaxLimit, 2 * rest.length + 16);
  const seen = new Map<string, LeaseRecord>();
  try {
    for (const record of await ops.list(prefix, limit, '')) seen.set(record.resource, record);
  } catch (error) {
    // The look is only advice: when the store cannot answer it now (a list past its deadline on a
    // busy server), every candidate is tried in order instead; a failing store fails those too.
    if (!(error instanceof LeaseError && error.retryable)) throw error;
  }
  const now = ops.now();
  for (const resource of rest) {
    const record = seen.get(resource);
    if (record && isLive(record, now, ops.allowanceMs)) continue;
    const lease = await ops.tryAcquire(resource, owner, ttlMs);
    if (lease) return lease;
  }
  return null;
}

/** The longest prefix every string of `names` starts with, whole code points only. */
export function commonPrefix(names: readonly string[]): string {
  if (names.length === 0) return '';
  let prefix = names[0]!;
  for (const name of names) {
    let i = 0;
    while (i < prefix.length && i < name.length && prefix[i] === name[i]) i++;
    prefix = prefix.slice(0, i);
  }
  // Never end on the first half of a surrogate pair.
  const last = prefix.charCodeAt(prefix.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? prefix.slice(0, -1) : prefix;
}

/** `items` starting at a random one, in order after it: callers arriving together spread out. */
export function rotated<T>(items: readonly T[]): T[] {
  const start = Math.floor(Math.random() * items.length);
  return [...items.slice(start), ...items.slice(0, start)];
}
