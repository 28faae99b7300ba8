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
