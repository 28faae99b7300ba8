import { isLive, type LeaseRecord } from '../core/lease.js';
import type { LeaseStore } from '../core/store.js';
import type { Clock } from '../core/time.js';
import type { HeldLease } from '../client/held-lease.js';
import type { LeaseClient } from '../client/lease-client.js';
import {
  assign,
  assignWeighted,
  capacityOf,
  rebalanceWeighted,
  type Assignment,
} from './assign.js';
import type { ExpiryTimers } from './expiry-timers.js';
import { Fallbacks } from './fallbacks.js';
import { findFree } from './find-free.js';
import type { FleetReporter } from './fleet-reporter.js';
import { HoldOffs } from './hold-offs.js';
import type { LoadBook } from './load-book.js';
import type { FleetLayout, LeaseManagerEvents, WantedResources } from './manager-options.js';
import { FULL_READS_PER_SCAN } from './member-view.js';
import { membersKey } from './members.js';
import type { Membership } from './membership.js';
import { plan, planWeighted, type Plan } from './plan.js';
import type { TakeoverTracker } from './takeover-tracker.js';
import type { Taker } from './taker.js';
import { checkWanted } from './wanted.js';
import type { WorkRunner } from './work-runner.js';
import { commonPrefix, PAGE_SIZE, shuffle } from './util.js';

/** What a reconciler needs of its manager. */
export interface ReconcilerHost {
  readonly client: LeaseClient;
  readonly store: LeaseStore;
  readonly clock: Clock;
  readonly resources: WantedResources;
  /** Set for a `BucketManager`: its bucket count, and its wanted set may use reserved names. */
  readonly layout: FleetLayout | undefined;
  readonly balance: boolean;
  readonly maxLeases: number;
  readonly tolerance: number;
  readonly maxMovesPerScan: number;
  /** The scan period scans run (see `ReconcileLoop.scanMs`). */
  readonly scanMs: number;
  readonly membership: Membership;
  readonly loads: LoadBook;
  readonly takeovers: TakeoverTracker;
  readonly taker: Taker;
  readonly runner: WorkRunner;
  readonly timers: ExpiryTimers;
  readonly report: FleetReporter;
  emit<K extends keyof LeaseManagerEvents>(event: K, ...args: LeaseManagerEvents[K]): void;
  /** The jittered scan period (see `ReconcileLoop.nextInterval`). */
  nextInterval(): number;
  /** Leases held for wanted resources (the membership lease not included). */
  held(): HeldLease[];
  /** How many leases are held for wanted resources. */
  heldCount(): number;
  /** Whether the manager is stopping. */
  stopping(): boolean;
}

/**
 * What one worker decides and does at each reconcile pass: reads the wanted set and the members,
 * deals the shares (again, when either changed or the weights moved), plans what to drop, shed and
 * take (`plan`, `planWeighted`), hands leases over, and takes up to its share — its assigned
 * resources first, then what the store announced free, then, at most once a scan, what a search of
 * every record finds free (see `HoldOffs` for what waits a scan). It also takes a wanted resource
 * announced free between passes when it is this worker's to take.
 */
export class Reconciler {
  private wantedList: readonly string[] = [];
  private wanted = new Set<string>();
  private assignment: Assignment | undefined;
  /** Whether the fleet balances weight (per unit of capacity) rather than counting leases. */
  private byWeight = false;
  /** This worker's fair load, when weighted. */
  private fair = 0;
  private share = 0;
  private readonly holdOffs: HoldOffs;
  /** Others' free resources this worker waits its turn to take (see `Fallbacks`). */
  private readonly fallbacks: Fallbacks;
  private readonly owner: string;

  constructor(private readonly host: ReconcilerHost) {
    this.holdOffs = new HoldOffs(
      host.clock,
      host.scanMs,
      host.store.capabilities.watch && typeof host.store.watch === 'function',
    );
    this.owner = host.client.owner;
    // About one batch's round trip on a busy store: long enough for the member before to have
    // taken the resource and the store to have announced it, short beside a heartbeat.
    this.fallbacks = new Fallbacks(host.clock, Math.min(200, host.client.heartbeatMs / 10));
  }

  /** Whether the fleet balances by weight rather than by count (as of the last pass). */
  get weighted(): boolean {
    return this.byWeight;
  }

  /** Whether `resource` is wanted (as of the last pass). */
  wants(resource: string): boolean {
    return this.wanted.has(resource);
  }

  /** The wanted set the `resources` option gives now, checked (see `checkWanted`). */
  async resolveWanted(): Promise<string[]> {
    const resources = this.host.resources;
    return checkWanted(
      typeof resources === 'function' ? await resources() : resources,
      !this.host.layout,
    );
  }

  /** This worker's load and fair load (see `LeaseManager.loadStatus`). */
  loadStatus(): { load: number; fair: number; weighted: boolean } {
    return {
      load: this.byWeight
        ? this.keptLoad()
        : this.host.heldCount() - this.host.runner.leavingCount(),
      fair: this.byWeight ? this.fair : this.share,
      weighted: this.byWeight,
    };
  }

  /** One reconcile pass; returns the delay until the next one. */
  async pass(): Promise<number> {
    const { host } = this;
    const { client, membership, loads, takeovers, runner, taker } = host;
    const wanted = await this.resolveWanted();
    await membership.join();
    const seen = await membership.current();
    membership.checkLayout(seen);
    // A worker of another bucket count refuses to take part (see `checkLayout`): no share for it.
    const buckets = host.layout?.buckets;
    const members =
      buckets === undefined
        ? seen
        : seen.filter((m) => m.buckets === buckets || m.id === this.owner);
    const key = membersKey(members);
    const wantedChanged = !sameList(wanted, this.wantedList);
    if (wantedChanged) {
      this.wantedList = wanted;
      this.wanted = new Set(wanted);
      takeovers.keepOnly(this.wanted);
      loads.keepOnly(this.wanted);
    }
    const weighted = loads.weighed() || members.some((m) => capacityOf(m) !== 1);
    const weighing = weighted ? loads.weights(this.wantedList) : undefined;
    const reweighed = weighted !== this.byWeight || weighing?.changed === true;
    this.byWeight = weighted;
    let newcomers = new Set<string>();
    const newView = membership.isNewView(key);
    if (wantedChanged || newView || reweighed || !this.assignment) {
      const before = this.assignment;
      newcomers = membership.newcomers(members);
      // A change of weights alone keeps the targets and moves the fewest (`rebalanceWeighted`);
      // a membership or wanted-set change deals afresh, the same on every worker.
      this.assignment = !weighing
        ? await assign(this.wantedList, members)
        : before?.fair && !newView && !wantedChanged
          ? rebalanceWeighted(before, this.wantedList, weighing.weights, members, host.tolerance)
          : await assignWeighted(this.wantedList, weighing.weights, members);
      const shrank = membership.noteDealt(members, key);
      if (before && newView)
        takeovers.membersLeft(before.targetOf, new Set(members.map((m) => m.id)));
      // When members only left, nobody sheds (every share rises): free records, theirs, may be
      // searched for at once instead of a scan later — even when a member joined shortly before
      // (a leave right after a join waited out the join's hold for a whole scan period).
      this.holdOffs.dealt(!wantedChanged && newcomers.size === 0 && shrank);
    }
    const assignment = this.assignment;
    const share = host.balance
      ? Math.min(host.maxLeases, assignment.shares.get(this.owner) ?? 0)
      : host.maxLeases;
    this.fair = assignment.fair?.get(this.owner) ?? 0;
    if (newView) {
      host.report.members(assignment.members, share);
      host.emit('members', assignment.members, share);
    }
    this.share = share;
    // Leases already being handed over are decided: a scan while they go must not shed again.
    const held = new Map(
      host
        .held()
        .filter((lease) => !runner.isLeaving(lease))
        .map((lease) => [lease.resource, lease]),
    );
    const decided: Plan = this.byWeight
      ? planWeighted({
          me: this.owner,
          wanted: this.wanted,
          held: [...held.keys()],
          assignment,
          newcomers,
          weightOf: (r) => loads.weightOf(r),
          fair: this.fair,
          tolerance: host.tolerance,
          limit: host.maxLeases,
          maxShed: host.maxMovesPerScan,
          balance: host.balance,
          under: loads.membersUnder(),
        })
      : plan({
          me: this.owner,
          wanted: this.wanted,
          held: [...held.keys()],
          assignment,
          newcomers,
          share: this.share,
          balance: host.balance,
        });
    void runner.handOff(
      decided.drop.map((r) => held.get(r)!),
      'unwanted',
    );
    // What it hands over for balance, though assigned to it, is left for the member it goes to.
    for (const r of decided.shed) this.holdOffs.gave(r);
    void runner.handOff(
      decided.shed.map((r) => held.get(r)!),
      'balance',
    );
    const room = (): number => this.room();
    const now = host.clock.monotonic();
    this.holdOffs.forgetRefusals(now);
    if (decided.deficit > 0) {
      const untried = decided.candidates.filter(
        (r) => !this.holdOffs.isRefused(r) && !this.holdOffs.justGave(r, now),
      );
      await taker.take(untried, room);
    }
    // Still short: what the store announced free lately (others shedding for this worker, before
    // it had a share to take them with), before a search of every record.
    this.holdOffs.forgetStale(now, held);
    if (this.short() && this.holdOffs.hasFreed()) {
      const freed = this.holdOffs
        .takeFreed()
        .filter((r) => this.wanted.has(r) && !held.has(r) && !client.lease(r));
      // Most of what was announced free is taken by its assigned worker at once: trying all of it,
      // a batch of `room` at a time, cost a leave on etcd several seconds of refusals (1,300
      // announced, 39 short). A couple of batches' worth; the search finds the rest.
      const few = this.fitting(shuffle(freed)).slice(0, Math.max(16, 2 * room()));
      await taker.take(few, room);
    }
    // Searching every record for free ones waits until the others have had a scan to shed what
    // is over their shares (it would mostly find nothing), and happens at most once per scan period.
    // When weighing, workers whose weights disagree for a while (a rolling change of the weight
    // option, say) can each leave a free resource to the other: a few workers a scan search even
    // when not short, and take what stayed free (see `fitting`), as the membership is sampled.
    const sampled = this.byWeight && Math.random() * host.membership.size < FULL_READS_PER_SCAN;
    if ((this.short() || sampled) && this.holdOffs.maySearch(now)) {
      this.holdOffs.searched(now);
      const { asked, taken } = await this.takeFree(room);
      // Free records found and asked for, some refused, and still short: other workers took them
      // first (a leaver's leases, announced to every worker at once). Others may still be free:
      // search again shortly rather than at the next scan period.
      if (taken < asked && this.short()) {
        this.holdOffs.searchAgain();
        return Math.round(Math.min(client.heartbeatMs / 2, 500) * (0.5 + Math.random()));
      }
    }
    // Below the band with room for more, and the load against the fair load: said in the
    // membership record at the next renewal.
    const kept = this.byWeight ? this.keptLoad() : 0;
    loads.markStanding(
      this.byWeight && room() > 0 && kept < this.fair * (1 - host.tolerance),
      this.byWeight ? { load: kept, fair: this.fair } : undefined,
    );
    const deficit = this.byWeight ? decided.deficit : Math.max(0, room());
    const interval = host.nextInterval();
    const settled = deficit === 0 && decided.shed.length === 0;
    return settled ? interval : Math.min(interval, 2 * client.heartbeatMs);
  }

  /**
   * A wanted resource became free (released, or its record expired): take it if it is assigned to
   * this worker, or if this worker is short of its share. Takes are gathered into batches.
   */
  released(resource: string): void {
    const { host } = this;
    if (host.stopping() || host.client.lease(resource)) return;
    const mine =
      this.assignment?.targetOf.get(resource) === this.owner &&
      !this.holdOffs.justGave(resource, host.clock.monotonic());
    const wanted = this.wanted.has(resource);
    if (wanted && mine) host.taker.soon(resource, () => this.room());
    else if (wanted && this.wouldTakeOthers(resource)) {
      // Another member's: this worker waits its turn (see `Fallbacks`), then tries if still short.
      const take = (): void => {
        if (host.stopping() || host.client.lease(resource) || !this.wanted.has(resource)) return;
        if (this.wouldTakeOthers(resource)) host.taker.soon(resource, () => this.room());
        // Not short now: kept with what was announced free, for a pass to try should it be short.
        else this.holdOffs.freed(resource);
      };
      const { members, targetOf } = this.assignment ?? { members: [], targetOf: new Map() };
      const delay = this.fallbacks.delayFor(resource, this.owner, members, targetOf.get(resource));
      if (delay === 0) take();
      else this.fallbacks.defer(resource, delay, take);
    }
    // Before the first scan the wanted set is not known yet: every announced resource counts.
    else if (this.wanted.size === 0 || wanted) this.holdOffs.freed(resource);
  }

  /** Whether this worker, short of its share, would take a free resource assigned to another. */
  private wouldTakeOthers(resource: string): boolean {
    return this.short() && this.fitting([resource]).length === 1;
  }

  /** The manager stops: no turn taken after this. */
  stop(): void {
    this.fallbacks.clear();
  }

  /** A resource announced taken again (by anyone): no longer worth trying as announced free. */
  takenAgain(resource: string): void {
    this.fallbacks.taken(resource);
    this.holdOffs.takenAgain(resource);
  }

  /** `resource` was refused: not asked again for a scan (its holder, when known, is noted). */
  refused(resource: string, holder: LeaseRecord | undefined): void {
    this.holdOffs.refused(resource);
    if (holder) {
      this.noteHolder(holder);
      this.host.timers.armTakeover(holder);
    }
  }

  /**
   * Fills a deficit the assigned resources could not: finds free wanted resources anywhere.
   * Resolves to how many free ones it asked for and how many of those it took.
   */
  private async takeFree(room: () => number): Promise<{ asked: number; taken: number }> {
    if (this.wanted.size === 0) return { asked: 0, taken: 0 };
    const { host } = this;
    const storeNow = host.membership.storeNow();
    const skewMs = host.client.maxClockSkewMs;
    const found = await findFree({
      store: host.store,
      prefix: commonPrefix(this.wantedList),
      wanted: this.wanted,
      skip: new Set(host.held().map((l) => l.resource)),
      enough: 2 * room(),
      isFree: (record) => {
        const free = !isLive(record, storeNow, skewMs);
        if (free && record.expiresAt > 0) this.noteHolder(record); // expired, not released
        return free;
      },
      pageSize: PAGE_SIZE,
    });
    for (const record of found.live) {
      this.noteHolder(record);
      host.timers.armTakeover(record);
    }
    const candidates = this.fitting(shuffle(found.free));
    const asked = Math.min(candidates.length, Math.max(0, room()));
    const taken = await host.taker.take(candidates, room);
    return { asked, taken };
  }

  /**
   * How many more leases this worker takes now: up to its share when counting leases; when
   * weighing, up to `maxLeases` (what it takes beyond its assigned resources is chosen by `fitting`).
   */
  private room(): number {
    const { host } = this;
    return (
      (this.byWeight ? host.maxLeases : this.share) - host.heldCount() + host.runner.leavingCount()
    );
  }

  /**
   * Whether this worker would take resources not assigned to it: below its share, or its fair load
   * — and, while another member says it is below its band, only when this one is below its band
   * too: what members above their fair load hand over then is for those (see `planWeighted`).
   */
  private short(): boolean {
    if (this.room() <= 0) return false;
    if (!this.byWeight) return true;
    const load = this.keptLoad();
    if (load >= this.fair) return false;
    return (
      this.host.loads.membersUnder().size === 0 || load < this.fair * (1 - this.host.tolerance)
    );
  }

  /**
   * Of free resources not assigned to this worker, those it takes: when weighing, those that fit
   * under its fair load — and any this worker has seen free for half a scan period already. That
   * is the fleet's guarantee that every wanted resource is held: two workers whose views of the
   * weights differ for a while may each take a resource for the other's, and neither takes it then;
   * a free resource means some worker is under its fair load (the loads add up to the total), so
   * that worker takes it at its next search.
   */
  private fitting(candidates: string[]): string[] {
    if (!this.byWeight) return candidates;
    let load = this.keptLoad();
    const now = this.host.clock.monotonic();
    const out: string[] = [];
    for (const resource of candidates) {
      const w = this.host.loads.weightOf(resource);
      if (load + w > this.fair && !this.holdOffs.leftFreeLong(resource, now)) continue;
      out.push(resource);
      load += w;
    }
    return out;
  }

  /** The weight of the wanted resources held, leases being handed over not counted. */
  private keptLoad(): number {
    const { loads, runner } = this.host;
    let load = 0;
    for (const lease of this.host.held())
      if (!runner.isLeaving(lease) && this.wanted.has(lease.resource))
        load += loads.weightOf(lease.resource);
    return load;
  }

  /** A record of a resource seen held (or left expired) by someone: its holder, should we take it over. */
  private noteHolder(record: LeaseRecord): void {
    if (this.wanted.has(record.resource)) this.host.takeovers.seen(record);
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
