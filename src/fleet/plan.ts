import type { Assignment } from './assign.js';

/** What one worker knows at a reconcile, besides the assignment. */
export interface PlanInput {
  readonly me: string;
  readonly wanted: ReadonlySet<string>;
  /** Resources this worker holds now. */
  readonly held: readonly string[];
  readonly assignment: Assignment;
  /** Members that were not in this worker's previous view: what others shed goes to them first. */
  readonly newcomers: ReadonlySet<string>;
  /** The most leases this worker takes: its share when balancing, else its own `maxLeases`. */
  readonly share: number;
  readonly balance: boolean;
}

export interface Plan {
  /** Held resources that are no longer wanted. */
  readonly drop: readonly string[];
  /** Held resources to hand over because this worker holds more than its share. */
  readonly shed: readonly string[];
  /** How many more leases this worker should take. */
  readonly deficit: number;
  /** Resources assigned to this worker that it does not hold, to try first, in order. */
  readonly candidates: readonly string[];
}

/**
 * One worker's decisions at a reconcile, as a pure function of what it knows. Leases are sticky: a
 * worker keeps what it holds up to its share whoever the assignment names, sheds only what is over
 * its share (choosing leases assigned to newcomers first, then leases assigned to others), and
 * fills a deficit from its assigned resources first. With every share exact, the fleet settles
 * with every count within one of W/N, and a join moves about W/(N+1) leases, all to the newcomer.
 */
export function plan(input: PlanInput, random: () => number = Math.random): Plan {
  const { me, wanted, held, assignment, newcomers, share, balance } = input;
  const drop = held.filter((r) => !wanted.has(r));
  const mine = held.filter((r) => wanted.has(r));
  const over = balance ? Math.max(0, mine.length - share) : 0;
  const rank = (r: string): number => {
    const target = assignment.targetOf.get(r);
    if (target === me) return 2;
    return target !== undefined && newcomers.has(target) ? 0 : 1;
  };
  const shed =
    over === 0
      ? []
      : mine
          .map((r) => ({ r, rank: rank(r), tie: random() }))
          .sort((a, b) => a.rank - b.rank || a.tie - b.tie)
          .slice(0, over)
          .map((x) => x.r);
  const heldSet = new Set(held);
  const deficit = Math.max(0, share - mine.length);
  const candidates: string[] = [];
  if (deficit > 0) {
    for (const [resource, target] of assignment.targetOf)
      if (target === me && !heldSet.has(resource)) candidates.push(resource);
  }
  return { drop, shed, deficit, candidates };
}

/** What one worker knows at a reconcile when resources are weighed. */
export interface WeightedPlanInput {
  readonly me: string;
  readonly wanted: ReadonlySet<string>;
  /** Resources this worker holds now. */
  readonly held: readonly string[];
  readonly assignment: Assignment;
  /** Members that were not in this worker's previous view: what is shed goes to them first. */
  readonly newcomers: ReadonlySet<string>;
  /** Each resource's weight, as every worker reckons it. */
  readonly weightOf: (resource: string) => number;
  /** This worker's fair load (see `assignWeighted`). */
  readonly fair: number;
  /** How far above its fair load a worker may carry before it sheds, as a fraction (0.1: 10 %). */
  readonly tolerance: number;
  /** The most leases this worker holds (`maxLeases`). */
  readonly limit: number;
  /** The most leases shed at one reconcile. */
  readonly maxShed: number;
  readonly balance: boolean;
  /** Other members whose membership records say they are below their band. */
  readonly under?: ReadonlySet<string>;
}

export interface WeightedPlan extends Plan {
  /** The weight of the wanted resources this worker keeps after the shed. */
  readonly load: number;
}

/**
 * One worker's decisions when resources are weighed, as a pure function of what it knows. Leases
 * stay sticky: a worker sheds only while its load is above `fair × (1 + tolerance)`, and only leases
 * the assignment gives to other members — the heaviest first that still leave it at or above
 * `fair × (1 − tolerance)`, so it reaches the band in the fewest moves without falling through it —
 * at most `maxShed` at a time. It takes every resource assigned to it that it does not hold (the
 * assignment fits them within its fair load); what others shed that is not assigned to it, it takes
 * only while it stays under its fair load (`room`). Under constant weights nothing moves once every
 * worker is inside its band or holds only what is assigned to it: the two bounds keep a fleet
 * from oscillating. A member whose membership record says it is below its band (`under`) gets one
 * resource a scan from each member above its fair load, one that keeps the giver at or above its
 * fair load, assigned to the member below or to the giver itself (one assigned to a third member
 * would go to that one): the loads then only move towards the fair ones. One member that just
 * joined (`newcomers`) is handed, in the same way but at once, all each member carries above its
 * fair load, heaviest first: a join into a balanced fleet moves a few heavy leases.
 */
export function planWeighted(
  input: WeightedPlanInput,
  random: () => number = Math.random,
): WeightedPlan {
  const { me, wanted, held, assignment, newcomers, weightOf, fair, tolerance, limit } = input;
  const drop = held.filter((r) => !wanted.has(r));
  const mine = held.filter((r) => wanted.has(r));
  let load = 0;
  for (const r of mine) load += weightOf(r);
  // What this worker may hand to `receivers`, heaviest first: resources assigned to one of them,
  // or to this worker itself — one assigned to a third member would go to that member instead.
  const offers = (receivers: ReadonlySet<string>): { r: string; w: number; rank: number }[] =>
    mine
      .map((r) => {
        const target = assignment.targetOf.get(r);
        const rank = target !== undefined && receivers.has(target) ? 0 : target === me ? 2 : 1;
        return { r, w: weightOf(r), rank };
      })
      .filter((x) => x.rank !== 1 && x.w > 0)
      .sort((a, b) => b.w - a.w || a.rank - b.rank || (a.r < b.r ? -1 : a.r > b.r ? 1 : 0));
  const upper = fair * (1 + tolerance);
  const lower = fair * (1 - tolerance);
  const shed: string[] = [];
  const maxShed = input.balance ? input.maxShed : 0;
  // One member just joined and holds nothing yet: each member above its fair load hands it what it
  // carries above that at once, the heaviest first, so a join moves a few heavy resources rather
  // than the newcomer's share of every weight. (Several at once, as at a cold start, take what the
  // assignment gives them, below: which of them would take a resource handed over is not known.)
  // A member below its band: one resource a scan goes from each member above its fair load, the
  // heaviest that keeps this one at or above its fair load and fits under the fair load of every
  // member below the band (so whichever takes it stays under it, as the taker's `fitting` asks).
  const joined = [...newcomers].filter((id) => id !== me);
  const under = input.under;
  const filling = maxShed > 0 && joined.length === 1 && load > fair;
  if (filling) {
    let left = load - fair;
    for (const x of offers(new Set(joined))) {
      if (shed.length >= maxShed || left <= 0) break;
      if (x.w > left) continue;
      shed.push(x.r);
      load -= x.w;
      left -= x.w;
    }
  } else if (maxShed > 0 && under !== undefined && under.size > 0 && load > fair) {
    let cap = load - fair;
    for (const id of under) cap = Math.min(cap, tolerance * (assignment.fair?.get(id) ?? 0));
    const pick = offers(under).find((x) => x.w <= cap);
    if (pick) {
      shed.push(pick.r);
      load -= pick.w;
    }
  }
  const handed = new Set(shed);
  const toNewcomers = !filling && newcomers.size > 0 && load > fair;
  if (maxShed > 0 && (load > upper || mine.length > limit || toNewcomers)) {
    const others = mine
      .filter((r) => assignment.targetOf.get(r) !== me && !handed.has(r))
      .map((r) => {
        const target = assignment.targetOf.get(r);
        const rank = target !== undefined && newcomers.has(target) ? 0 : 1;
        return { r, w: weightOf(r), rank, tie: random() };
      })
      .sort((a, b) => b.w - a.w || a.rank - b.rank || a.tie - b.tie);
    const left: typeof others = [];
    // A member joined: what is assigned to it goes while this worker is above its fair load (a
    // newcomer's fair load is made of such leases), as a count-balanced fleet sheds to newcomers.
    if (toNewcomers) {
      for (const x of others) {
        if (load <= fair || shed.length >= maxShed) break;
        if (x.rank === 0 && load - x.w >= lower) {
          shed.push(x.r);
          load -= x.w;
        }
      }
    }
    const newcomersShed = new Set(shed);
    for (const x of others) {
      if (newcomersShed.has(x.r)) continue;
      if (load <= upper || shed.length >= maxShed) left.push(x);
      else if (load - x.w >= lower) {
        shed.push(x.r);
        load -= x.w;
      } else left.push(x);
    }
    // Each one left would take the load below the band: the lightest of them, once, which the
    // member it is assigned to has room for.
    if (load > upper && shed.length < maxShed && left.length > 0) {
      const lightest = left.pop()!;
      shed.push(lightest.r);
      load -= lightest.w;
    }
    // Over `maxLeases` (a limit lowered, say): the lightest of the rest go too.
    const keep = new Set(shed);
    const rest = mine
      .filter((r) => !keep.has(r))
      .sort((a, b) => weightOf(a) - weightOf(b) || (a < b ? -1 : 1));
    for (let i = 0; mine.length - shed.length > limit && i < rest.length; i++) {
      if (shed.length >= maxShed) break;
      shed.push(rest[i]!);
      load -= weightOf(rest[i]!);
    }
  }
  const heldSet = new Set(held);
  const candidates: string[] = [];
  const room = Math.max(0, limit - (mine.length - shed.length));
  for (const [resource, target] of assignment.targetOf) {
    if (candidates.length >= room) break;
    if (target === me && !heldSet.has(resource)) candidates.push(resource);
  }
  return { drop, shed, deficit: candidates.length, candidates, load };
}
