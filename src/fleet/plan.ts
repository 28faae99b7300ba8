import type { LeaseRecord } from '../core/lease.js';

/** What one worker knows at a reconcile. */
export interface PlanInput {
  readonly me: string;
  /** Wanted resources, without duplicates. */
  readonly wanted: readonly string[];
  /** The records of wanted resources, by resource. */
  readonly records: ReadonlyMap<string, LeaseRecord>;
  /** Owners of live membership leases, this worker included. */
  readonly members: readonly string[];
  /** Resources this worker holds now. */
  readonly held: ReadonlySet<string>;
  /** The store's time now, as best this worker can tell. */
  readonly storeNow: number;
  readonly skewMs: number;
  /** Until the next scan: records expiring before then get a takeover timer. */
  readonly horizonMs: number;
  readonly maxLeases: number;
  readonly balance: boolean;
}

export interface Plan {
  /** How many leases this worker should hold. */
  readonly target: number;
  /** Free resources (no record, released or expired) to acquire now, in the order to try them. */
  readonly acquire: readonly string[];
  /** Live records of others that expire before the next scan: try to take them at `at` (store time). */
  readonly expiring: readonly { resource: string; at: number }[];
  /** Held resources to hand over to an under-loaded worker. */
  readonly shed: readonly string[];
  /** Held resources that are no longer wanted. */
  readonly drop: readonly string[];
  /** Some worker is under its share while another is over: scan again soon. */
  readonly unbalanced: boolean;
}

/**
 * One worker's decisions at a reconcile, as a pure function of what it saw. With W wanted
 * resources and N live members, each worker may take free resources up to ⌈W/N⌉ (so the shares
 * always cover the wanted set), and a worker above ⌊W/N⌋ hands leases over only while some member
 * is below ⌊W/N⌋: the fleet settles with every count within one of W/N and does not flap.
 */
export function plan(input: PlanInput, random: () => number = Math.random): Plan {
  const { me, wanted, records, held, storeNow, skewMs, horizonMs, maxLeases, balance } = input;
  const members = new Set(input.members).add(me);
  const target = Math.min(maxLeases, balance ? Math.ceil(wanted.length / members.size) : Infinity);
  const floor = Math.min(maxLeases, Math.floor(wanted.length / members.size));

  const wantedSet = new Set(wanted);
  const drop = [...held].filter((r) => !wantedSet.has(r));
  const mine = wanted.filter((r) => held.has(r));

  const free: string[] = [];
  const expiring: { resource: string; at: number }[] = [];
  const load = new Map<string, number>([...members].map((m) => [m, 0]));
  load.set(me, mine.length);
  for (const resource of wanted) {
    if (held.has(resource)) continue;
    const record = records.get(resource);
    if (!record || record.owner === '' || storeNow > record.expiresAt + skewMs) {
      free.push(resource);
      continue;
    }
    if (record.owner !== me && load.has(record.owner))
      load.set(record.owner, load.get(record.owner)! + 1);
    if (record.expiresAt + skewMs < storeNow + horizonMs)
      expiring.push({ resource, at: record.expiresAt + skewMs });
  }

  shuffle(free, random);
  const room = Math.max(0, target - mine.length);
  const acquire = free.slice(0, room);

  // Hand over what others can absorb: first anything above ⌈W/N⌉ to those below it, then anything
  // above ⌊W/N⌋ to those below that. Stable states then have every count within one of W/N.
  const others = [...load.entries()].filter(([m]) => m !== me).map(([, n]) => n);
  const absorb = (level: number): number =>
    others.reduce((sum, n) => sum + Math.max(0, level - n), 0);
  const aboveCeil = Math.min(Math.max(0, mine.length - target), absorb(target));
  const aboveFloor = Math.min(Math.max(0, mine.length - aboveCeil - floor), absorb(floor));
  const count = balance && free.length === 0 ? aboveCeil + aboveFloor : 0;
  const shed = mine.slice(mine.length - count);
  const loads = [...load.values()];
  const unbalanced =
    balance &&
    ((loads.some((n) => n > target) && loads.some((n) => n < target)) ||
      (loads.some((n) => n > floor) && loads.some((n) => n < floor)));

  return { target, acquire, expiring, shed, drop, unbalanced };
}

function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}
