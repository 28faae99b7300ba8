import { ErrorCode, invalidArgument, LeaseError } from '../core/errors.js';
import type { LeaseRecord } from '../core/lease.js';
import { dataBytes } from '../core/lease-data.js';
import { describe, LIMITS } from '../core/options.js';

/**
 * What each wanted resource weighs, the same on every worker of a group: a function (asked once per
 * resource at every reconcile), a `Map` or an object of names to weights. A resource it leaves out
 * weighs 1. Weights are finite and at least 0.
 */
export type ResourceWeights =
  ((resource: string) => number) | ReadonlyMap<string, number> | Readonly<Record<string, number>>;

/** Checks the `weight` option's shape (its values are checked as they are read). */
export function checkWeights(value: unknown): void {
  if (value === undefined || typeof value === 'function' || value instanceof Map) return;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const [resource, w] of Object.entries(value)) checkWeight(w, resource);
    return;
  }
  throw invalidArgument(
    'weight',
    `must be a function of the resource name, a Map or an object of names to weights, got ${describe(value)}`,
  );
}

/** A weight (from the `weight` option or `reportLoad`): a finite number, at least 0. */
export function checkWeight(value: unknown, resource: string, field = 'weight'): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw invalidArgument(
      field,
      `of ${JSON.stringify(resource)} must be a finite number at least 0, got ${describe(value)}`,
    );
  return value;
}

/** The lease data of a membership record that carries its member's load reports. */
interface Published {
  /** The owner who wrote it: a slot's data outlives its holder, and a later one ignores it. */
  readonly o: string;
  /** Reported loads by resource. */
  readonly l: Record<string, number>;
  /** 1 while its member is below its band and has room: above-fair members hand it load. */
  readonly u?: 1;
  /** Its member's load and fair load when weighing (three significant digits), for the dashboard. */
  readonly w?: readonly [number, number];
}

/** The fewest membership renewals between two publications of a member's load and fair load alone. */
const STANDING_EVERY = 4;

/** A load written with three significant digits: a report that moves less is not news. */
function rounded(value: number): number {
  return Number(value.toPrecision(3));
}

/**
 * The weights a fleet balances by: the `weight` option, and the loads workers report for what they
 * hold (`reportLoad`), which every worker reads from the others' membership records.
 *
 * A worker publishes, in its own membership record's lease data, the loads of the resources it
 * holds — its own reports, and for a resource it took but has not measured yet, the load its last
 * holder published (so a weight follows its resource through a handoff). The data is limited to
 * `LIMITS.dataMaxBytes`: the reports that differ most from the `weight` option go first, and the
 * rest count at their option weight. Every worker keeps the last published load of every resource
 * it has seen, so a resource between two holders keeps its weight. A worker publishes at a
 * membership renewal, and only when a load moved by more than the balance tolerance: a noisy
 * measure does not make the fleet re-read its membership at every beat.
 */
export class LoadBook {
  /** Loads this worker measured, by resource (kept while it holds the resource). */
  private readonly own = new Map<string, number>();
  /**
   * Loads of resources this worker gave up lately, with when: still published for `keepMs`, so
   * the next holder reads the load even when it had not read the membership before the handoff.
   */
  private readonly given = new Map<string, { load: number; at: number }>();
  /** The last published load of each resource seen in a membership record, and when it was seen. */
  private readonly known = new Map<string, number>();
  private readonly seenAt = new Map<string, number>();
  /** What this worker last published. */
  private lastPublished = new Map<string, number>();
  /**
   * Whether this worker is below its band, its load and fair load (see `markStanding`), and what
   * it last published of them.
   */
  private under = false;
  private lastUnder = false;
  private standing: readonly [number, number] | undefined;
  private lastStanding: readonly [number, number] | undefined;
  /** Calls of `toPublish` since the load and fair load were last published. */
  private sinceStanding = 0;
  /** Other members whose records say they are below their band. */
  private othersUnder: ReadonlySet<string> = new Set();
  private cache: { wanted: readonly string[]; weights: Float64Array } | undefined;

  /**
   * @param keepMs - how long a load no membership record publishes any more still counts (the
   *   gap while its resource passes between holders); after that the resource weighs its option
   *   weight again.
   */
  constructor(
    private readonly owner: string,
    private readonly option: ResourceWeights | undefined,
    private readonly tolerance: number,
    private readonly now: () => number,
    private readonly keepMs: number,
  ) {}

  /**
   * Whether any weight can differ from 1: the fleet then balances by weight, not by count. A load
   * this worker measured counts once it is published, as it does for the others.
   */
  weighed(): boolean {
    return this.option !== undefined || this.known.size > 0;
  }

  /** A resource's weight from the option alone. */
  optionWeight(resource: string): number {
    const option = this.option;
    if (option === undefined) return 1;
    let value: unknown;
    if (typeof option === 'function') {
      try {
        value = option(resource);
      } catch (error) {
        throw new LeaseError(
          ErrorCode.INVALID_ARGUMENT,
          `the weight function threw for ${JSON.stringify(resource)}: ${String(error)}`,
          { cause: error },
        );
      }
    } else if (option instanceof Map) value = option.get(resource);
    else
      value = Object.hasOwn(option, resource)
        ? (option as Record<string, number>)[resource]
        : undefined;
    return value === undefined ? 1 : checkWeight(value, resource);
  }

  /** A resource's weight as the fleet reckons it: its last published load, else its option weight. */
  weightOf(resource: string): number {
    return this.known.get(resource) ?? this.optionWeight(resource);
  }

  /**
   * The weight of each of `wanted`, in its order, and whether any moved since the last call with
   * the same list (the assignment is then computed again).
   */
  weights(wanted: readonly string[]): { weights: Float64Array; changed: boolean } {
    const weights = Float64Array.from(wanted, (r) => this.weightOf(r));
    const before = this.cache;
    let changed = before === undefined || before.wanted !== wanted;
    if (!changed) {
      for (let i = 0; i < weights.length; i++)
        if (weights[i] !== before!.weights[i]) {
          changed = true;
          break;
        }
    }
    this.cache = { wanted, weights };
    return { weights, changed };
  }

  /** Records this worker's measured load of a resource it holds. */
  report(resource: string, load: number): void {
    this.own.set(resource, load);
    this.given.delete(resource);
  }

  /** This worker no longer holds the resource: its load is published a while longer, then forgotten. */
  forget(resource: string): void {
    const load = this.own.get(resource) ?? this.known.get(resource);
    this.own.delete(resource);
    if (load !== undefined) this.given.set(resource, { load, at: this.now() });
  }

  /**
   * Where this worker stands after a reconcile: whether it is below `fair × (1 − tolerance)` with
   * room for more, published at the next membership renewal so members above their fair load hand
   * it some (see `planWeighted`); and, when weighing, its load and fair load, published for the
   * dashboard when either moved by more than the tolerance (`undefined`: not weighing).
   */
  markStanding(under: boolean, standing?: { load: number; fair: number }): void {
    this.under = under;
    this.standing = standing && [rounded(standing.load), rounded(standing.fair)];
  }

  /** Other members whose membership records say they are below their band. */
  membersUnder(): ReadonlySet<string> {
    return this.othersUnder;
  }

  /** Reads the loads published in live membership records (this worker's own among them). */
  absorb(records: readonly LeaseRecord[]): void {
    const seen = new Map<string, number>();
    const under = new Set<string>();
    for (const record of records) {
      const published = parsePublished(record);
      if (!published) continue;
      if (published.u === 1 && record.owner !== this.owner) under.add(record.owner);
      for (const [resource, load] of Object.entries(published.l))
        seen.set(resource, Math.max(load, seen.get(resource) ?? 0));
    }
    this.othersUnder = under;
    const now = this.now();
    for (const [resource, load] of seen) {
      this.known.set(resource, load);
      this.seenAt.set(resource, now);
    }
    for (const [resource, at] of this.seenAt) {
      if (now - at <= this.keepMs) continue;
      this.known.delete(resource);
      this.seenAt.delete(resource);
    }
  }

  /** Forgets the weights of resources no longer wanted. */
  keepOnly(wanted: ReadonlySet<string>): void {
    for (const resource of this.known.keys()) {
      if (wanted.has(resource)) continue;
      this.known.delete(resource);
      this.seenAt.delete(resource);
    }
    for (const resource of this.own.keys()) if (!wanted.has(resource)) this.own.delete(resource);
    for (const resource of this.given.keys())
      if (!wanted.has(resource)) this.given.delete(resource);
  }

  /**
   * The lease data to publish for the resources held now, or `undefined` when no load moved by
   * more than the tolerance since the last publication (nor appeared or went). Call `published`
   * with its `loads` once the store has it.
   */
  toPublish(held: readonly string[]):
    | {
        text: string;
        loads: Map<string, number>;
        under: boolean;
        standing: readonly [number, number] | undefined;
        /** Whether peers should read it now: a load or the below-the-band mark changed. */
        news: boolean;
      }
    | undefined {
    const loads = new Map<string, number>();
    const add = (resource: string, load: number | undefined): void => {
      if (load === undefined) return;
      const option = this.optionWeight(resource);
      if (Math.abs(load - option) > this.tolerance * option) loads.set(resource, rounded(load));
    };
    const now = this.now();
    for (const [resource, { load, at }] of this.given) {
      if (now - at > this.keepMs) this.given.delete(resource);
      else add(resource, load);
    }
    for (const resource of held) add(resource, this.own.get(resource) ?? this.known.get(resource));
    const entries = [...loads].sort(
      (a, b) => surprise(b, this.optionWeight(b[0])) - surprise(a, this.optionWeight(a[0])),
    );
    const l: Record<string, number> = {};
    const kept = new Map<string, number>();
    const under = this.under;
    const moved = this.standingMoved();
    const standing = moved ? this.standing : this.lastStanding;
    const data = (): Published => ({
      o: this.owner,
      l,
      ...(under ? { u: 1 as const } : {}),
      ...(standing ? { w: standing } : {}),
    });
    let text = JSON.stringify(data());
    for (const [resource, load] of entries) {
      l[resource] = load;
      const next = JSON.stringify(data());
      if (dataBytes(next) > LIMITS.dataMaxBytes) {
        delete l[resource];
        break;
      }
      text = next;
      kept.set(resource, load);
    }
    const news = this.moved(kept) || under !== this.lastUnder;
    if (!news && !moved) return undefined;
    return { text, loads: kept, under, standing, news };
  }

  /**
   * Whether the load or fair load moved by more than the tolerance since last published, at most
   * once every `STANDING_EVERY` calls (membership renewals): a fleet handing leases about does not
   * write its membership records at every beat for the dashboard's sake.
   */
  private standingMoved(): boolean {
    this.sinceStanding++;
    const now = this.standing;
    const before = this.lastStanding;
    if (now === undefined || before === undefined) return now !== before;
    if (this.sinceStanding < STANDING_EVERY) return false;
    const far = (a: number, b: number): boolean =>
      Math.abs(a - b) > this.tolerance * Math.max(Math.abs(a), Math.abs(b));
    return far(now[0], before[0]) || far(now[1], before[1]);
  }

  /** What this worker published is in the store: it counts here at once, as it will for peers. */
  published(loads: Map<string, number>, under = false, standing?: readonly [number, number]): void {
    this.lastPublished = loads;
    this.lastUnder = under;
    if (standing !== this.lastStanding) this.sinceStanding = 0;
    this.lastStanding = standing;
    const now = this.now();
    for (const [resource, load] of loads) {
      this.known.set(resource, load);
      this.seenAt.set(resource, now);
    }
  }

  private moved(loads: ReadonlyMap<string, number>): boolean {
    if (loads.size !== this.lastPublished.size) return true;
    for (const [resource, load] of loads) {
      const before = this.lastPublished.get(resource);
      if (before === undefined) return true;
      if (Math.abs(load - before) > this.tolerance * Math.max(load, before)) return true;
    }
    return false;
  }
}

/** How far a published load is from the option weight, relative to it. */
function surprise([, load]: readonly [string, number], option: number): number {
  return Math.abs(load - option) / Math.max(option, 1e-9);
}

/** The load reports in a membership record's data, if its current holder wrote them. */
function parsePublished(record: LeaseRecord): Published | undefined {
  const data = record.data;
  if (typeof data !== 'string' || !data.startsWith('{')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { o, l, u, w } = parsed as Partial<Published>;
  if (o !== record.owner || typeof l !== 'object' || l === null) return undefined;
  const loads: Record<string, number> = {};
  for (const [resource, load] of Object.entries(l)) if (isLoad(load)) loads[resource] = load;
  const standing = Array.isArray(w) && w.length === 2 && w.every(isLoad) ? w : undefined;
  return { o, l: loads, ...(u === 1 ? { u } : {}), ...(standing ? { w: standing } : {}) };
}

function isLoad(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/**
 * What a membership record's holder last published of its standing (see `markStanding`): its load
 * and fair load, and whether it said it is below its band; `undefined` when it published none (a
 * fleet counting leases) or the data is not its own (a slot's earlier holder, malformed).
 */
export function publishedStanding(
  record: LeaseRecord,
): { load: number; fair: number; below: boolean } | undefined {
  const published = parsePublished(record);
  if (!published?.w) return undefined;
  const [load, fair] = published.w;
  return { load, fair, below: published.u === 1 };
}
