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
  /** How much load this member carries relative to the others (`capacity` option). @default 1 */
  readonly capacity?: number;
  /** A bucketed fleet member's bucket count (see `BucketManager`); `undefined` in other fleets. */
  readonly buckets?: number;
}

export interface Assignment {
  /** Member ids in a fixed order (sorted). */
  readonly members: readonly string[];
  /** How many leases each member should hold, by id. */
  readonly shares: ReadonlyMap<string, number>;
  /** The member each wanted resource is assigned to. */
  readonly targetOf: ReadonlyMap<string, string>;
  /**
   * Set when resources are weighed (`assignWeighted`): each member's fair load, the fleet's total
   * weight split in proportion to capacity (less where a member's `limit` keeps it lower).
   */
  readonly fair?: ReadonlyMap<string, number>;
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
export function mix(x: number): number {
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

/** Members in a fixed order (by id), so every worker walks them alike. */
function byId(members: readonly Member[]): Member[] {
  return [...members].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Visits `order` in slices of about `CHUNK_OPS` weight computations (`members` per entry),
 * yielding to the event loop between slices when the work is large.
 */
async function inSlices(
  order: readonly number[],
  members: number,
  visit: (i: number) => void,
): Promise<void> {
  const perChunk = Math.max(1, Math.floor(CHUNK_OPS / Math.max(1, members)));
  const yielding = order.length * members > CHUNK_OPS;
  for (let start = 0; start < order.length; start += perChunk) {
    for (const i of order.slice(start, start + perChunk)) visit(i);
    if (yielding) await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/**
 * Assigns every wanted resource to a member: resources in a fixed hashed order, each to the member
 * with the highest rendezvous weight that still has room in its share. `O(W × N)` weight
 * computations, done in slices that yield to the event loop when the work is large.
 */
export async function assign(
  wanted: readonly string[],
  members: readonly Member[],
): Promise<Assignment> {
  const sorted = byId(members);
  const key = sorted.map((m) => `${m.id}\u0000${m.limit}`).join('\u0001');
  const known = recent.find((r) => r.key === key && sameList(r.wanted, wanted));
  if (known) return known.assignment;
  const assignment = await dealt(wanted, sorted);
  recent.unshift({ key, wanted: [...wanted], assignment });
  recent.length = Math.min(recent.length, RECENT_MAX);
  return assignment;
}

/**
 * The last assignments dealt in this process, newest first: managers of one fleet that share a
 * process (and one manager whose inputs come back) deal once, not once each. An `Assignment` is
 * never changed once made.
 */
const recent: { key: string; wanted: readonly string[]; assignment: Assignment }[] = [];
const RECENT_MAX = 2;

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** `assign` itself, members sorted by id. */
async function dealt(wanted: readonly string[], sorted: readonly Member[]): Promise<Assignment> {
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
  await inSlices(order, ids.length, (i) => {
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
    if (best < 0) return; // every member is at its limit: nobody is assigned this one
    room[best]!--;
    targetOf.set(wanted[i]!, ids[best]!);
  });
  return { members: ids, shares: quota, targetOf };
}

/**
 * Assigns every wanted resource by weight: each member's fair load is the total weight split in
 * proportion to its capacity. Resources go heaviest first (ties in the fixed hashed order), each to
 * the member with the highest rendezvous weight that it still fits under its fair load, else to
 * the member it leaves least loaded for its capacity; a member at its `limit` gets no more. Heavy
 * first, the light ones fill the gaps, so every member ends within about one light resource of its
 * fair load whenever no single resource is heavier than a fair load. The same inputs give the same
 * answer on every worker; `O(W × N)` as `assign`, in slices that yield to the event loop.
 *
 * @param weights - one finite non-negative weight per entry of `wanted`, in its order.
 */
export async function assignWeighted(
  wanted: readonly string[],
  weights: ArrayLike<number>,
  members: readonly Member[],
): Promise<Assignment> {
  const sorted = byId(members);
  const ids = sorted.map((m) => m.id);
  let total = 0;
  for (let i = 0; i < wanted.length; i++) total += weights[i]!;
  const fair = fairLoads(sorted, total, wanted.length);
  const budget = Float64Array.from(ids, (id) => fair.get(id)!);
  const capacity = Float64Array.from(sorted, (m) => capacityOf(m));
  const load = new Float64Array(ids.length);
  const room = Float64Array.from(sorted, (m) => m.limit);
  const count = new Int32Array(ids.length);
  const memberHashes = Uint32Array.from(ids, hashName);
  const resourceHashes = Uint32Array.from(wanted, hashName);
  const order = Array.from(wanted.keys()).sort(
    (a, b) =>
      weights[b]! - weights[a]! ||
      resourceHashes[a]! - resourceHashes[b]! ||
      (wanted[a]! < wanted[b]! ? -1 : wanted[a]! > wanted[b]! ? 1 : 0),
  );
  const targetOf = new Map<string, string>();
  await inSlices(order, ids.length, (i) => {
    const h = resourceHashes[i]!;
    const w = weights[i]!;
    let best = -1;
    let bestWeight = -1;
    let fallback = -1;
    let fallbackLoad = Infinity;
    for (let m = 0; m < ids.length; m++) {
      if (room[m]! <= 0) continue;
      if (load[m]! + w <= budget[m]!) {
        const rank = weight(h, memberHashes[m]!);
        if (rank > bestWeight) {
          bestWeight = rank;
          best = m;
        }
      } else if (best < 0) {
        const after = (load[m]! + w) / (capacity[m]! || 1e-9);
        if (after < fallbackLoad) {
          fallbackLoad = after;
          fallback = m;
        }
      }
    }
    const chosen = best >= 0 ? best : fallback;
    if (chosen < 0) return; // every member is at its limit: nobody is assigned this one
    room[chosen]!--;
    load[chosen]! += w;
    count[chosen]!++;
    targetOf.set(wanted[i]!, ids[chosen]!);
  });
  const shareOf = new Map(ids.map((id, m) => [id, count[m]!] as const));
  return { members: ids, shares: shareOf, targetOf, fair };
}

/** A member's capacity: 1 unless it declared one. */
export function capacityOf(member: Member): number {
  return member.capacity ?? 1;
}

/**
 * Each member's fair load: `total` split in proportion to capacity. A member whose `limit` lets
 * it hold fewer resources than its part at the mean weight gets that many resources' worth, and the
 * others split the rest.
 */
export function fairLoads(
  members: readonly Member[],
  total: number,
  resources: number,
): Map<string, number> {
  const out = new Map<string, number>();
  const mean = resources === 0 ? 0 : total / resources;
  let open = [...members];
  let remaining = total;
  for (;;) {
    const capacity = open.reduce((sum, m) => sum + capacityOf(m), 0);
    const perUnit = capacity > 0 ? remaining / capacity : 0;
    const capped = open.filter((m) => m.limit * mean < perUnit * capacityOf(m));
    if (capped.length === 0) {
      for (const m of open) out.set(m.id, perUnit * capacityOf(m));
      return out;
    }
    for (const m of capped) {
      out.set(m.id, m.limit * mean);
      remaining -= m.limit * mean;
    }
    open = open.filter((m) => !capped.includes(m));
  }
}

/**
 * The assignment after the weights changed and nothing else (same members, same wanted list):
 * the previous targets kept, and few resources moved to bring every member within
 * `fair × (1 ± tolerance)`. From each member over the band (the most loaded first) go its heaviest
 * resources that still leave it inside the band. Each goes to the member it leaves least loaded
 * for its capacity among those it fits under the band; when it fits nowhere, to the member that
 * then gives up the fewest of its own to get back under — or it stays, and its holder gives up
 * others instead, when that is fewer. Nothing moves back. These are the leases the holders then
 * shed (`planWeighted` chooses the same way), so a weight change moves few leases rather than
 * re-dealing every target. Every worker that saw the same weights computes the same answer.
 */
export function rebalanceWeighted(
  previous: Assignment,
  wanted: readonly string[],
  weights: ArrayLike<number>,
  members: readonly Member[],
  tolerance: number,
): Assignment {
  const sorted = byId(members);
  const ids = sorted.map((m) => m.id);
  const index = new Map(ids.map((id, m) => [id, m] as const));
  let total = 0;
  for (let i = 0; i < wanted.length; i++) total += weights[i]!;
  const fair = fairLoads(sorted, total, wanted.length);
  const budget = Float64Array.from(ids, (id) => fair.get(id)!);
  const upper = Float64Array.from(budget, (b) => b * (1 + tolerance));
  const lower = Float64Array.from(budget, (b) => b * (1 - tolerance));
  const load = new Float64Array(ids.length);
  const count = new Int32Array(ids.length);
  const target = new Int32Array(wanted.length).fill(-1);
  /** Resources decided: moved once, or kept where they are on purpose. They move no more. */
  const fixed = new Uint8Array(wanted.length);
  const memberHashes = Uint32Array.from(ids, hashName);
  const relative = (m: number, extra = 0): number => (load[m]! + extra) / (budget[m]! || 1e-9);
  for (let i = 0; i < wanted.length; i++) {
    const m = index.get(previous.targetOf.get(wanted[i]!) ?? '');
    if (m === undefined) continue;
    target[i] = m;
    load[m]! += weights[i]!;
    count[m]!++;
  }
  /** Each member's movable resources, heaviest first, and their running sums (rebuilt on change). */
  const movable: (Int32Array | undefined)[] = ids.map(() => undefined);
  const sums: Float64Array[] = ids.map(() => new Float64Array(0));
  const movableOf = (m: number): Int32Array => {
    let list = movable[m];
    if (!list) {
      const own: number[] = [];
      for (let i = 0; i < wanted.length; i++) if (target[i] === m && !fixed[i]) own.push(i);
      own.sort((a, b) => weights[b]! - weights[a]!);
      list = Int32Array.from(own);
      const sum = new Float64Array(list.length + 1);
      for (let k = 0; k < list.length; k++) sum[k + 1] = sum[k]! + weights[list[k]!]!;
      movable[m] = list;
      sums[m] = sum;
    }
    return list;
  };
  /** How many of its movable resources member `m` must give up, heaviest first, to shed `excess`. */
  const giveUps = (m: number, excess: number, except = -1): number => {
    if (excess <= 0) return 0;
    const list = movableOf(m);
    const sum = sums[m]!;
    const at = except < 0 ? -1 : list.indexOf(except);
    const n = list.length - (at >= 0 ? 1 : 0);
    // The sum of the k heaviest, `except` left out.
    const heaviest = (k: number): number =>
      at < 0 || at >= k ? sum[k]! : sum[k + 1]! - weights[except]!;
    if (heaviest(n) < excess) return Infinity;
    let lo = 1;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (heaviest(mid) >= excess) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
  const move = (i: number, to: number): void => {
    const from = target[i]!;
    if (from >= 0) {
      load[from]! -= weights[i]!;
      count[from]!--;
      movable[from] = undefined;
    }
    target[i] = to;
    fixed[i] = 1;
    load[to]! += weights[i]!;
    count[to]!++;
    movable[to] = undefined;
  };
  /** Where resource `i` of member `from` goes, and what that costs in further moves (0: it fits). */
  const place = (i: number, from: number): { to: number; cost: number } => {
    const w = weights[i]!;
    const h = hashName(wanted[i]!);
    let fit = -1;
    let fitLoad = Infinity;
    let fitRank = -1;
    let spill = -1;
    let spillCost = Infinity;
    let spillLoad = Infinity;
    for (let m = 0; m < ids.length; m++) {
      if (m === from || count[m]! >= sorted[m]!.limit) continue;
      const after = relative(m, w);
      if (load[m]! + w <= upper[m]!) {
        const rank = weight(h, memberHashes[m]!);
        if (after < fitLoad || (after === fitLoad && rank > fitRank)) {
          fit = m;
          fitLoad = after;
          fitRank = rank;
        }
      } else if (fit < 0) {
        const cost = giveUps(m, load[m]! + w - upper[m]!);
        if (cost < spillCost || (cost === spillCost && after < spillLoad)) {
          spill = m;
          spillCost = cost;
          spillLoad = after;
        }
      }
    }
    return fit >= 0 ? { to: fit, cost: 0 } : { to: spill, cost: spillCost };
  };
  // Resources with no live target (none here unless the wanted list changed): heaviest first.
  const orphans = Array.from(wanted.keys())
    .filter((i) => target[i]! < 0)
    .sort((a, b) => weights[b]! - weights[a]!);
  for (const i of orphans) {
    const { to } = place(i, -1);
    if (to >= 0) move(i, to);
  }
  for (let round = 0; round < 4 * ids.length + 4; round++) {
    const over = ids
      .map((_, m) => m)
      .filter((m) => load[m]! > upper[m]!)
      .sort((a, b) => relative(b) - relative(a));
    let progress = false;
    for (const m of over) {
      for (const i of movableOf(m)) {
        if (load[m]! <= upper[m]!) break;
        if (fixed[i] || load[m]! - weights[i]! < lower[m]!) continue;
        const { to, cost } = place(i, m);
        if (to < 0) continue;
        // Keeping it costs the holder this many others instead.
        if (cost > 0 && giveUps(m, load[m]! - upper[m]!, i) <= cost) {
          fixed[i] = 1;
          movable[m] = undefined;
          progress = true;
          break;
        }
        move(i, to);
        progress = true;
      }
    }
    if (!progress) break;
  }
  const targetOf = new Map<string, string>();
  for (let i = 0; i < wanted.length; i++)
    if (target[i]! >= 0) targetOf.set(wanted[i]!, ids[target[i]!]!);
  const shareOf = new Map(ids.map((id, m) => [id, count[m]!] as const));
  return { members: ids, shares: shareOf, targetOf, fair };
}
