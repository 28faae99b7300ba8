/**
 * Which resources each member of a fleet should try to hold: a pure function of the live
 * membership and the wanted set, so every worker computes the same answer without reading any
 * lease record. Assignment is advice (design rule 7): it only chooses what a worker tries; the
 * store's compare-and-set decides who holds.
 *
 * Shares are exact (every count within one of W/N, less where a member declared `maxLeases`), and
 * within them each resource goes to the member that ranks it highest (rendezvous hashing with
 * bounded loads), so a cold fleet goes straight to balance and a membership change moves few
 * resources. The manager adds stickiness on top: it never moves a lease only because the target
 * moved, only when a worker is over or under its share.
 */

export interface Member {
  readonly id: string;
  /** The most leases this member takes (`Infinity` when unlimited). */
  readonly limit: number;
}

export interface Assignment {
  /** Member ids in a fixed order (sorted). */
  readonly members: readonly string[];
  /** How many leases each member should hold, by id. */
  readonly shares: ReadonlyMap<string, number>;
  /** The member each wanted resource is assigned to. */
  readonly targetOf: ReadonlyMap<string, string>;
}

/** 32-bit FNV-1a over UTF-16 code units. */
export function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** murmur3's finaliser: every input bit affects every output bit. */
function mix(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** The rendezvous weight of a (resource, member) pair from their name hashes. */
export function weight(resourceHash: number, memberHash: number): number {
  return mix(resourceHash ^ Math.imul(memberHash, 0x9e3779b1));
}

/**
 * Exact shares: members with a limit below the fair share get their limit, the rest split what is
 * left as evenly as integers allow; which of them get the one extra is fixed by a hash of their id
 * (not by join order), so every worker agrees.
 */
export function shares(members: readonly Member[], total: number): Map<string, number> {
  const out = new Map<string, number>();
  let open = [...members].sort(
    (a, b) => mix(hashName(a.id)) - mix(hashName(b.id)) || (a.id < b.id ? -1 : 1),
  );
  let remaining = total;
  for (;;) {
    const fair = open.length === 0 ? 0 : Math.floor(remaining / open.length);
    const capped = open.filter((m) => m.limit <= fair);
    if (capped.length === 0) break;
    for (const m of capped) {
      out.set(m.id, m.limit);
      remaining -= m.limit;
    }
    open = open.filter((m) => m.limit > fair);
  }
  const base = open.length === 0 ? 0 : Math.floor(remaining / open.length);
  const extra = open.length === 0 ? 0 : remaining % open.length;
  open.forEach((m, i) => out.set(m.id, base + (i < extra ? 1 : 0)));
  return out;
}

/** Weight computations between two yields to the event loop, so the lease watchdogs stay on time (rule 6). */
const CHUNK_OPS = 100_000;

/**
 * Assigns every wanted resource to a member: resources in a fixed hashed order, each to the member
 * with the highest rendezvous weight that still has room in its share. `O(W × N)` weight
 * computations, done in slices that yield to the event loop when the work is large.
 */
export async function assign(
  wanted: readonly string[],
  members: readonly Member[],
): Promise<Assignment> {
  const sorted = [...members].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const ids = sorted.map((m) => m.id);
  const quota = shares(sorted, wanted.length);
  const room = Int32Array.from(ids, (id) => quota.get(id)!);
  const memberHashes = Uint32Array.from(ids, hashName);
  const resourceHashes = Uint32Array.from(wanted, hashName);
  const order = Array.from(wanted.keys()).sort(
    (a, b) =>
      resourceHashes[a]! - resourceHashes[b]! ||
      (wanted[a]! < wanted[b]! ? -1 : wanted[a]! > wanted[b]! ? 1 : 0),
  );
  const targetOf = new Map<string, string>();
  const perChunk = Math.max(1, Math.floor(CHUNK_OPS / Math.max(1, ids.length)));
  const yielding = wanted.length * ids.length > CHUNK_OPS;
  for (let start = 0; start < order.length; start += perChunk) {
    for (const i of order.slice(start, start + perChunk)) {
      const h = resourceHashes[i]!;
      let best = -1;
      let bestWeight = -1;
      for (let m = 0; m < ids.length; m++) {
        if (room[m]! <= 0) continue;
        const w = weight(h, memberHashes[m]!);
        if (w > bestWeight) {
          bestWeight = w;
          best = m;
        }
      }
      if (best < 0) continue; // every member is at its limit: nobody is assigned this one
      room[best]!--;
      targetOf.set(wanted[i]!, ids[best]!);
    }
    if (yielding) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return { members: ids, shares: quota, targetOf };
}
