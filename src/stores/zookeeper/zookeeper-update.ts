import type { Lease, LeaseRef } from '../../core/lease.js';
import {
  mtimeOf,
  opBytesOf,
  recordOf,
  releaseOps,
  renewOps,
  splitForMulti,
} from './zookeeper-ops.js';
import type { ResourcePaths } from './zookeeper-paths.js';
import type { ZkSession } from './zookeeper-session.js';
import type { ZkStat, ZkTransaction } from './zookeeper-driver.js';

/** A lease of a batch, its znodes and what the reads found. */
export interface Item<T extends LeaseRef> {
  readonly index: number;
  readonly lease: T;
  readonly paths: ResourcePaths;
}

/** What the reads of one lease found, when it is still the caller's. */
export interface Found {
  readonly recordVersion: number;
  readonly hold: ZkStat;
}

/**
 * Reads each lease's record, token and hold znodes (sent together on `s`) and keeps those still
 * held by their owner with their token: the hold exists, the token znode is at the lease's token
 * (no grant since), and the record names the owner.
 */
export async function stillHeld<T extends LeaseRef>(
  s: ZkSession,
  items: readonly Item<T>[],
): Promise<(Found | undefined)[]> {
  const reads = await Promise.all(
    items.map(({ paths }) =>
      Promise.all([s.getData(paths.record), s.exists(paths.token), s.exists(paths.hold)]),
    ),
  );
  return reads.map(([record, token, hold], k) => {
    if (!record || !token || !hold) return undefined;
    const { lease, paths } = items[k]!;
    const found = recordOf(paths, record, token);
    if (found.owner !== lease.owner || found.token !== lease.token) return undefined;
    return { recordVersion: record.stat.version, hold };
  });
}

/**
 * Sends the operations of `items` in `multi`s of up to 256 KB (sent together). A `multi` is all
 * or nothing, and tells only the first operation that failed: that lease gets `failed`, and the
 * rest of its `multi` is sent again without it (a lease changed between the reads and the write,
 * which is rare). `ops` adds one lease's operations and says how many; `answer` reads its result
 * from the results, given where its operations start.
 */
export async function sendBatched<T extends LeaseRef, R>(
  s: ZkSession,
  items: readonly Item<T>[],
  ops: (tx: ZkTransaction, item: Item<T>) => number,
  answer: (item: Item<T>, results: readonly { stat?: ZkStat }[], first: number) => R,
  failed: R,
): Promise<Map<number, R>> {
  const out = new Map<number, R>();
  const groups = splitForMulti(items, (item) => opBytesOf(item.paths, item.lease.owner));
  await Promise.all(
    groups.map(async (group) => {
      let rest = group;
      while (rest.length > 0) {
        const starts: number[] = [];
        const r = await s.multi((tx) => {
          let at = 0;
          for (const item of rest) {
            starts.push(at);
            at += ops(tx, item);
          }
        });
        if (r.ok) {
          rest.forEach((item, k) => out.set(item.index, answer(item, r.results, starts[k]!)));
          return;
        }
        let culprit = starts.findIndex(
          (start, k) => r.index < (starts[k + 1] ?? Infinity) && r.index >= start,
        );
        if (culprit < 0) culprit = 0;
        out.set(rest[culprit]!.index, failed);
        rest = rest.filter((_, k) => k !== culprit);
      }
    }),
  );
  return out;
}

export function renewMulti(
  s: ZkSession,
  items: readonly Item<Lease>[],
  found: ReadonlyMap<number, Found & { move: boolean }>,
  ttlOf: (lease: Lease) => number,
  ephemeral: number,
): Promise<Map<number, number | null>> {
  return sendBatched<Lease, number | null>(
    s,
    items,
    (tx, { index, lease, paths }) => {
      const f = found.get(index)!;
      return renewOps(
        tx,
        paths,
        f.recordVersion,
        lease.owner,
        ttlOf(lease),
        f.move ? { ephemeral } : undefined,
      );
    },
    ({ index }, results, first) => {
      const at = first + (found.get(index)!.move ? 2 : 1);
      const stat = results[at]?.stat;
      return stat ? mtimeOf(stat) : null;
    },
    null,
  );
}

export function releaseMulti(
  s: ZkSession,
  items: readonly Item<LeaseRef>[],
  found: ReadonlyMap<number, Found>,
): Promise<Map<number, boolean>> {
  return sendBatched<LeaseRef, boolean>(
    s,
    items,
    (tx, { index, paths }) => releaseOps(tx, paths, found.get(index)!.recordVersion),
    () => true,
    false,
  );
}

/** Items in rounds where each resource appears at most once, in input order. */
export function rounds<T extends { readonly paths: ResourcePaths }>(items: readonly T[]): T[][] {
  const seen = new Map<string, number>();
  const out: T[][] = [];
  for (const item of items) {
    const round = seen.get(item.paths.record) ?? 0;
    seen.set(item.paths.record, round + 1);
    (out[round] ??= []).push(item);
  }
  return out;
}
