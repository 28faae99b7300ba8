import { EventEmitter } from 'node:events';
import { safeEmit } from '../core/safe-emit.js';
import { ErrorCode, invalidArgument, LeaseError } from '../core/errors.js';
import { isLive, type LeaseRecord } from '../core/lease.js';
import {
  checkInteger,
  checkKnownKeys,
  checkResource,
  describe,
  LIMITS,
  optionKeys,
} from '../core/options.js';
import type { LeaseStore } from '../core/store.js';
import { systemClock, type Clock, type TimerHandle } from '../core/time.js';
import type { HeldLease } from '../client/held-lease.js';
import { LeaseClient } from '../client/lease-client.js';
import { ExpiryTimers } from './expiry-timers.js';
import { FleetReporter } from './fleet-reporter.js';
import { TakeoverTracker } from './takeover-tracker.js';
import {
  assign,
  assignWeighted,
  capacityOf,
  rebalanceWeighted,
  type Assignment,
  type Member,
} from './assign.js';
import { findFree } from './find-free.js';
import {
  checkManagerOptions,
  MANAGER_DEFAULTS,
  FLEET_LAYOUT,
  type FleetLayout,
  type LeaseManagerEvents,
  type LeaseManagerOptions,
} from './manager-options.js';
import { checkWeight, LoadBook } from './load-book.js';
import { FULL_READS_PER_SCAN, MemberView } from './member-view.js';
import {
  generationKey,
  liveMemberRecords,
  liveMembers,
  membersKey,
  membersPrefix,
  slotsToTry,
} from './members.js';
import { plan, planWeighted, type Plan } from './plan.js';
import { Taker } from './taker.js';
import { checkWanted } from './wanted.js';
import { WorkRunner } from './work-runner.js';
import { commonPrefix, listAll, settleWithin, shuffle } from './util.js';

export type { LeaseManagerEvents } from './manager-options.js';

/** How `stop()` winds the worker down. */
export interface StopOptions {
  /** How long, in ms, to wait for `onAcquired` work to settle before releasing anyway. @default 10000 */
  timeoutMs?: number;
}

const STOP_KEYS = optionKeys<StopOptions>({ timeoutMs: true });

/** Announced-free resources remembered at most (see `freedAt`). */
const FREED_MAX = 100_000;
const PAGE = 5000;

/**
 * Keeps a set of wanted resources owned by a fleet of workers: each resource by exactly one live
 * worker, reclaimed at expiry when a worker dies, handed over gracefully on shutdown, and shared
 * evenly (every count within one of W/N) when `balance` is on. Each worker reads the membership
 * and the records of what it tries to take, never every record at every scan.
 */
export class LeaseManager extends EventEmitter<LeaseManagerEvents> {
  /** This worker's id in lease records and in the membership. */
  readonly owner: string;
  private readonly client: LeaseClient;
  /** The store the manager's client holds its leases in. */
  protected readonly store: LeaseStore;
  private readonly clock: Clock;
  private readonly options: LeaseManagerOptions;
  private readonly reconcileMs: number;
  private readonly balance: boolean;
  private readonly maxLeases: number;
  private readonly capacity: number;
  private readonly tolerance: number;
  private readonly maxMovesPerScan: number;
  /** Resource weights: the `weight` option and the loads workers report. */
  private readonly loads: LoadBook;
  /** Whether the fleet balances weight (per unit of capacity) rather than counting leases. */
  private weighted = false;
  /** This worker's fair load, when weighted. */
  private fair = 0;
  private publishing = false;
  private readonly membersPrefix: string;
  private readonly settleMs: number;
  private readonly taker: Taker;
  private readonly report: FleetReporter;
  /** Tells takeovers of expired leases apart, for the diagnostics channels and the logger. */
  private readonly takeovers: TakeoverTracker;
  private readonly memberView: MemberView;
  private readonly runner: WorkRunner;
  private readonly timers: ExpiryTimers;
  private wantedList: readonly string[] = [];
  private wanted = new Set<string>();
  private assignment: Assignment | undefined;
  private membersKey = '';
  private view = new Set<string>();
  private share = 0;
  private member: HeldLease | undefined;
  private storeOffset = 0;
  private failures = 0;
  /** When each assigned resource was last refused: not asked again for a scan, unless it is freed. */
  private readonly refusedAt = new Map<string, number>();
  /** When the view last gained a member (whose share others then shed to it). */
  private membersGrewAt = -Infinity;
  private searchedAt = -Infinity;
  /**
   * Resources the store announced free (released or expired) that this worker did not take then,
   * with when: a worker short of its share tries them before it searches every record. A joining
   * worker hears what the others shed for it before it has a share of its own.
   */
  private readonly freedAt = new Map<string, number>();
  /** When weighing: free resources this worker left for others because they did not fit, with when first (see `fitting`). */
  private readonly freeSince = new Map<string, number>();
  private reconcileTimer: TimerHandle | undefined;
  private running: Promise<void> | undefined;
  private rerun = false;
  private unwatch: (() => void) | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  private refed = true;
  private started = false;
  /** Scans run: set once `start()` has joined and the membership settled, never earlier. */
  private scanning = false;
  private stopping: Promise<void> | undefined;

  /** Set by `BucketManager`: its membership prefix and bucket count. */
  private readonly layout: FleetLayout | undefined;

  /** Checks `options` (throws `INVALID_ARGUMENT` naming the field); nothing runs until `start()`. */
  constructor(options: LeaseManagerOptions) {
    super();
    checkManagerOptions(options);
    const layout = (options as { [FLEET_LAYOUT]?: FleetLayout })[FLEET_LAYOUT];
    this.layout = layout;
    this.options = options;
    this.client = new LeaseClient({
      store: options.store,
      owner: options.owner,
      ttlMs: options.ttlMs,
      heartbeatMs: options.heartbeatMs,
      maxClockSkewMs: options.maxClockSkewMs,
      clock: options.clock,
      logger: options.logger,
    });
    this.owner = this.client.owner;
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.reconcileMs = options.reconcileMs ?? MANAGER_DEFAULTS.reconcileMs;
    this.balance = options.balance ?? MANAGER_DEFAULTS.balance;
    this.maxLeases = options.maxLeases ?? Infinity;
    this.capacity = options.capacity ?? 1;
    this.tolerance = options.balanceTolerance ?? MANAGER_DEFAULTS.balanceTolerance;
    this.maxMovesPerScan = options.maxMovesPerScan ?? Infinity;
    this.loads = new LoadBook(
      this.client.owner,
      options.weight,
      this.tolerance,
      () => this.clock.monotonic(),
      this.client.ttlMs,
    );
    const group = options.group ?? MANAGER_DEFAULTS.group;
    this.membersPrefix = layout?.membersPrefix ?? membersPrefix(group);
    this.report = new FleetReporter(this.owner, group, this.clock, options.logger);
    this.takeovers = new TakeoverTracker(this.owner, this.report);
    this.settleMs =
      options.settleMs ?? Math.min(this.client.heartbeatMs, MANAGER_DEFAULTS.settleMaxMs);
    this.taker = new Taker({
      client: this.client,
      clock: this.clock,
      batchSize: options.batchSize ?? MANAGER_DEFAULTS.batchSize,
      maxInFlight: options.maxInFlight ?? MANAGER_DEFAULTS.maxInFlight,
      onAcquired: (lease) => this.begin(lease),
      slowMs: Math.max(250, this.client.heartbeatMs / 4),
      busy: () => this.renewalsBehind(),
      recheckMs: Math.max(10, Math.round(this.client.heartbeatMs / 4)),
      onRefused: (resource, holder) => {
        this.refusedAt.set(resource, this.clock.monotonic());
        if (holder) {
          this.noteHolder(holder);
          this.timers.armTakeover(holder);
        }
      },
      onError: (error) => !this.stopping && this.reconcileFailed(error),
    });
    this.runner = new WorkRunner({
      client: this.client,
      clock: this.clock,
      report: this.report,
      work: options.onAcquired,
      emit: (event, ...args) => void this.emit(event, ...args),
      failed: (error) => this.reconcileFailed(error),
    });
    this.timers = new ExpiryTimers(
      this.clock,
      {
        ttlMs: this.client.ttlMs,
        heartbeatMs: this.client.heartbeatMs,
        graceMs: this.client.maxClockSkewMs + (this.store.expiryLagMs ?? 0),
        storeNow: () => this.storeNow(),
      },
      (resource, member) => {
        if (!member) return this.released(resource);
        this.memberView.markDirty();
        this.requestReconcile();
      },
    );
    this.memberView = new MemberView({
      store: this.store,
      prefix: this.membersPrefix,
      owner: this.owner,
      ttlMs: this.client.ttlMs,
      clock: this.clock,
      readAll: () => this.readMembers(),
    });
    this.client.on('lost', (lease, error) => {
      this.loads.forget(lease.resource);
      this.leaseLost(lease, error);
    });
    this.client.on('released', (lease) => {
      if (lease === this.member) return;
      this.loads.forget(lease.resource);
      this.emit('released', lease);
    });
  }

  /** Listener errors are isolated (see `safeEmit`): they cannot break a reconcile or a handoff. */
  override emit<K extends keyof LeaseManagerEvents>(
    event: K,
    ...args: LeaseManagerEvents[K]
  ): boolean {
    return safeEmit(this, event, args);
  }

  /**
   * Joins the fleet (rejects if the store cannot be reached or the owner id is taken), waits for
   * the membership to settle (`settleMs`) and runs the first reconcile, whose failures are reported
   * as `reconcile-failed` and retried. Until `stop()`, the manager keeps the process alive
   * like a listening server does (see `unref()`).
   */
  async start(): Promise<void> {
    if (this.started)
      throw new LeaseError(ErrorCode.INVALID_ARGUMENT, 'the LeaseManager was already started');
    this.started = true;
    this.keepAlive = setInterval(() => undefined, 1 << 30);
    if (!this.refed) this.keepAlive.unref();
    if (this.store.capabilities.watch && this.store.watch) {
      this.unwatch = this.store.watch('', (event) => {
        if (event.resource.startsWith(this.membersPrefix)) this.requestReconcile();
        else if (event.type !== 'acquired') this.released(event.resource);
        // Taken again (by anyone): no longer worth trying as announced free.
        else this.freedAt.delete(event.resource);
      });
    }
    try {
      // A bad wanted set or weight fails start() itself.
      const wanted = await this.resolveWanted();
      if (this.options.weight !== undefined) this.loads.weights(wanted);
      await this.join();
      await this.settle();
      // A bucketed worker refuses here, so start() itself fails (one more membership read).
      if (this.layout) this.checkLayout(await this.memberView.current());
    } catch (error) {
      this.unwatch?.();
      clearInterval(this.keepAlive);
      this.timers.clear(true);
      await this.client.close().catch(() => undefined);
      throw error;
    }
    // Bulk work that fails from here on is reported (`reconcile-failed`) and retried with backoff.
    this.scanning = true;
    await this.reconcile();
    this.report.started(this.held().length);
  }

  /** Lets the process exit while the manager runs (as `server.unref()` does). Returns the manager. */
  unref(): this {
    this.refed = false;
    this.keepAlive?.unref();
    this.client.unref();
    return this;
  }

  /** Undoes `unref()`: the running manager keeps the process alive again. */
  ref(): this {
    this.refed = true;
    this.keepAlive?.ref();
    this.client.ref();
    return this;
  }

  /** The held lease of a wanted resource, if this worker holds it (not yet released or lost). */
  protected leaseOf(resource: string): HeldLease | undefined {
    const lease = this.client.lease(resource);
    return lease === this.member ? undefined : lease;
  }

  /** Leases held for wanted resources (the membership lease not included). */
  held(): HeldLease[] {
    return this.client.held().filter((lease) => lease !== this.member);
  }

  /**
   * Reports the measured load of a resource this worker holds (requests per second, CPU, bytes:
   * any measure, the same on every worker). Peers read it with the membership, and the fleet
   * balances by it instead of the `weight` option's weight (see `weight`); it follows the resource
   * when another worker takes it over, until that worker reports its own. Returns `false`, and
   * records nothing, when this worker does not hold the resource.
   */
  reportLoad(resource: string, load: number): boolean {
    checkResource(resource);
    checkWeight(load, resource, 'load');
    const lease = this.client.lease(resource);
    if (!lease || lease === this.member) return false;
    this.loads.report(resource, load);
    return true;
  }

  /**
   * How this worker stands in the fleet's balance: the weight of the wanted resources it holds
   * (leases being handed over not counted), its fair load (`fair`: the fleet's total weight
   * split by capacity), and whether the fleet is balancing by weight. When counting leases, a
   * lease weighs 1 and `fair` is this worker's share.
   */
  loadStatus(): {
    /** What this worker holds: total weight by weight, else its lease count. */
    load: number;
    /** Its fair load: the total weight split by capacity, or its share when counting. */
    fair: number;
    /** Whether the fleet balances by weight rather than by count. */
    weighted: boolean;
  } {
    return {
      load: this.weighted ? this.keptLoad() : this.heldCount() - this.runner.leavingCount(),
      fair: this.weighted ? this.fair : this.share,
      weighted: this.weighted,
    };
  }

  /**
   * Aborts the work of every lease, waits for it to settle (at most `timeoutMs`), then releases
   * everything with one `releaseMany`, so peers watching the store take over at once.
   */
  stop(options: StopOptions = {}): Promise<void> {
    if (typeof options !== 'object' || options === null)
      throw invalidArgument('stop options', `must be an object, got ${describe(options)}`);
    checkKnownKeys('stop options', options, STOP_KEYS);
    const timeoutMs = checkInteger('timeoutMs', options.timeoutMs ?? 10_000, 0, LIMITS.ttlMaxMs);
    this.stopping ??= this.shutdown(timeoutMs);
    return this.stopping;
  }

  /** `await using manager = …` stops it (with the default `timeoutMs`) at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** Stops gracefully on SIGTERM and SIGINT, then lets the signal take its usual course. Returns the uninstaller. */
  installShutdownHandlers(signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): () => void {
    const handlers = signals.map((signal) => {
      const handler = (): void => {
        uninstall();
        void this.stop().finally(() => process.kill(process.pid, signal));
      };
      process.on(signal, handler);
      return [signal, handler] as const;
    });
    const uninstall = (): void => {
      for (const [signal, handler] of handlers) process.off(signal, handler);
    };
    return uninstall;
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    this.reconcileTimer?.clear();
    this.timers.clear(true);
    this.taker.stop();
    this.unwatch?.();
    try {
      await settleWithin([this.running], timeoutMs, this.clock);
      for (const lease of this.held()) lease.revoke('the manager is stopping');
      await this.runner.settle(timeoutMs);
      const releasing = this.held().length;
      // The leases first, the membership after: a peer that sees this worker gone must find its
      // records free, also where a batch is not one atomic write (NATS, S3: a peer that saw the
      // membership change early tried records still held and set them aside for a scan).
      // A failed release still closes the client (the membership goes, the heartbeat stops), then
      // fails the stop as a failed close does.
      let failed: { error: unknown } | undefined;
      if (releasing > 0)
        await this.client.releaseMany(this.held()).catch((error: unknown) => (failed = { error }));
      await this.client.close();
      if (failed) throw failed.error;
      this.report.stopped(releasing);
      this.report.load(() => ({ load: 0, fair: 0, weighted: this.weighted }), 0);
      // Peers re-read the membership at their next scan (at once where the store can watch). One
      // attempt: a stop is not held up, and a peer announcing at the same instant or the
      // sampling tells the others as well.
      await this.memberView.announce(1).catch(() => undefined);
    } finally {
      clearInterval(this.keepAlive);
      this.takeovers.clear();
    }
  }

  /**
   * Whether renewals are falling behind: some held lease went two beats without a successful
   * renewal (or is at risk). Taking more then would only add store work that competes with the
   * renewals of what is already held, so bulk takes wait until they catch up.
   */
  private renewalsBehind(): boolean {
    const now = this.clock.monotonic();
    const twoBeats = 2 * this.client.heartbeatMs;
    for (const lease of this.client.held()) {
      if (lease.state === 'at-risk') return true;
      // The validity window is three times what is left at `atRiskAt`.
      const renewedFrom = lease.validUntil - 3 * (lease.validUntil - lease.atRiskAt);
      if (now - renewedFrom > twoBeats) return true;
    }
    return false;
  }

  private heldCount(): number {
    return this.client.size - (this.member && !this.member.isTerminal ? 1 : 0);
  }

  /** The store's time now: our own clock for local-clock stores, else ours plus the offset seen on our leases. */
  private storeNow(): number {
    return this.clock.now() + (this.store.capabilities.clock === 'local' ? 0 : this.storeOffset);
  }

  private observe(lease: HeldLease): void {
    this.storeOffset = lease.expiresAt - lease.ttlMs - this.clock.now();
  }

  private requestReconcile(): void {
    if (this.stopping || !this.scanning) return;
    if (this.running) this.rerun = true;
    else void this.reconcile();
  }

  private async reconcile(): Promise<void> {
    if (this.stopping) return;
    this.reconcileTimer?.clear();
    let next: number;
    const pass = this.pass();
    this.running = pass.then(
      () => undefined,
      () => undefined,
    );
    try {
      next = await pass;
      this.failures = 0;
      this.report.load(() => this.loadStatus(), this.view.size);
    } catch (error) {
      this.reconcileFailed(error);
      // Back off while the store struggles: slower convergence, never lost leases (the heartbeat
      // keeps what is held on its own timer).
      this.failures++;
      const backoff = this.client.heartbeatMs * 2 ** Math.min(this.failures - 1, 6);
      next = Math.min(this.nextInterval(), Math.round(backoff * (0.75 + Math.random() * 0.5)));
    }
    this.running = undefined;
    if (this.stopping) return;
    if (this.rerun) {
      this.rerun = false;
      next = 0;
    }
    this.reconcileTimer = this.clock.setTimeout(() => void this.reconcile(), next);
  }

  /**
   * Takes a membership slot (again, if our membership lapsed): a free one of the group, else a new
   * one (see `slotsToTry`). Refuses an owner id that a live member already uses.
   */
  private async join(): Promise<void> {
    if (this.member && !this.member.isTerminal) return;
    const records = await listAll(this.store, this.membersPrefix, PAGE);
    const storeNow = this.storeNow();
    const skewMs = this.client.maxClockSkewMs;
    const live = liveMembers(records, this.membersPrefix, storeNow, skewMs);
    if (live.some((m) => m.id === this.owner)) {
      if (this.member === undefined) {
        throw new LeaseError(
          ErrorCode.INVALID_ARGUMENT,
          `another live worker uses the owner id ${JSON.stringify(this.owner)}`,
        );
      }
      // Our own membership lapsed here before it lapses at the store (the holder gives up
      // drift + skew early): wait for that record to expire, then join again.
      throw new LeaseError(
        ErrorCode.LEASE_UNAVAILABLE,
        `the membership lease of ${JSON.stringify(this.owner)} was lost and is not free again yet; retrying`,
        { retryable: true },
      );
    }
    const grace = skewMs + (this.store.expiryLagMs ?? 0);
    const slots = slotsToTry(
      records,
      this.membersPrefix,
      this.maxLeases,
      storeNow,
      grace,
      Math.random,
      this.capacity,
      this.layout?.buckets,
    );
    for (const slot of slots) {
      const member = await this.client.tryAcquire(slot);
      if (!member) continue; // another worker joining took it first
      this.member = member;
      this.observe(member);
      member.on('renewed', (lease) => {
        this.observe(lease);
        void this.publishLoads();
      });
      // Without watch, peers would hear of an announced change only at their next scan: look at
      // the generation record with each membership heartbeat instead (one record per beat).
      if (!this.store.capabilities.watch) member.on('renewed', () => void this.pollGeneration());
      this.memberView.markDirty();
      // Failing to announce costs the others speed (they sample the membership), not safety; and
      // a start is not held up by another worker's announcement: retries go on in the background.
      if (!(await this.memberView.announce(1).catch(() => true)))
        void this.memberView.announce(4, () => this.stopping !== undefined).catch(() => false);
      return;
    }
    throw new LeaseError(
      ErrorCode.LEASE_UNAVAILABLE,
      'every membership slot tried was taken by another joining worker; retrying',
      { retryable: true },
    );
  }

  private async pollGeneration(): Promise<void> {
    if (this.running || this.stopping) return;
    if (await this.memberView.moved().catch(() => false)) this.requestReconcile();
  }

  /** Waits until the membership has been stable for `settleMs` (at most about a TTL). */
  private async settle(): Promise<void> {
    if (this.settleMs === 0) return;
    let last = membersKey(await this.readMembers());
    // However long a fleet keeps growing, a worker waits at most about a TTL.
    const until = this.clock.monotonic() + this.client.ttlMs;
    while (this.clock.monotonic() < until && !this.stopping) {
      await new Promise<void>((resolve) => this.clock.setTimeout(resolve, this.settleMs));
      const key = membersKey(await this.readMembers());
      if (key === last) return;
      last = key;
    }
  }

  private async readMembers(): Promise<Member[]> {
    const records = await listAll(this.store, this.membersPrefix, PAGE);
    const storeNow = this.storeNow();
    const skewMs = this.client.maxClockSkewMs;
    const members = liveMembers(records, this.membersPrefix, storeNow, skewMs);
    this.loads.absorb(liveMemberRecords(records, this.membersPrefix, storeNow, skewMs));
    // Members that died (their record expired rather than being released on stop).
    const generation = generationKey(this.membersPrefix);
    this.takeovers.membersExpired(
      records.filter(
        (r) =>
          r.resource !== generation &&
          r.owner !== '' &&
          r.expiresAt > 0 &&
          !isLive(r, storeNow, skewMs),
      ),
    );
    if (!members.some((m) => m.id === this.owner))
      members.push({
        id: this.owner,
        limit: this.maxLeases,
        ...(this.capacity === 1 ? {} : { capacity: this.capacity }),
        ...(this.layout ? { buckets: this.layout.buckets } : {}),
      });
    this.timers.armMembers(records, this.owner);
    return members;
  }

  /**
   * In a bucketed fleet, refuses to take buckets while a live member counts buckets otherwise
   * (its buckets cover other resources: both could work on one resource). A worker that holds
   * buckets already goes on: the newcomer saw it in the read after its own join, and refuses.
   * Two that join at once each read after their own join, so at least one sees the other.
   */
  private checkLayout(members: readonly Member[]): void {
    const mine = this.layout?.buckets;
    if (mine === undefined || this.heldCount() > 0) return;
    const other = members.find((m) => m.id !== this.owner && m.buckets !== mine);
    if (other)
      throw invalidArgument(
        'buckets',
        `is ${mine} here, but live worker ${JSON.stringify(other.id)} of this group uses ${other.buckets ?? 'no buckets'}: every worker of a group must give the same count (a new count needs a new group)`,
      );
  }

  /** One reconcile pass; returns the delay until the next one. */
  private async pass(): Promise<number> {
    const wanted = await this.resolveWanted();
    await this.join();
    const seen = await this.memberView.current();
    this.checkLayout(seen);
    // A worker of another bucket count refuses to take part (see `checkLayout`): no share for it.
    const buckets = this.layout?.buckets;
    const members =
      buckets === undefined
        ? seen
        : seen.filter((m) => m.buckets === buckets || m.id === this.owner);
    const key = membersKey(members);
    const wantedChanged = !sameList(wanted, this.wantedList);
    if (wantedChanged) {
      this.wantedList = wanted;
      this.wanted = new Set(wanted);
      this.takeovers.keepOnly(this.wanted);
      this.loads.keepOnly(this.wanted);
    }
    const weighted = this.loads.weighed() || members.some((m) => capacityOf(m) !== 1);
    const weighing = weighted ? this.loads.weights(this.wantedList) : undefined;
    const reweighed = weighted !== this.weighted || weighing?.changed === true;
    this.weighted = weighted;
    let newcomers = new Set<string>();
    const newView = key !== this.membersKey;
    if (wantedChanged || newView || reweighed || !this.assignment) {
      const before = this.assignment;
      newcomers = new Set(this.view.size === 0 ? [] : members.map((m) => m.id));
      for (const id of this.view) newcomers.delete(id);
      // A change of weights alone keeps the targets and moves the fewest (`rebalanceWeighted`);
      // a membership or wanted-set change deals afresh, the same on every worker.
      this.assignment = !weighing
        ? await assign(this.wantedList, members)
        : before?.fair && !newView && !wantedChanged
          ? rebalanceWeighted(before, this.wantedList, weighing.weights, members, this.tolerance)
          : await assignWeighted(this.wantedList, weighing.weights, members);
      this.membersKey = key;
      if (before && newView)
        this.takeovers.membersLeft(before.targetOf, new Set(members.map((m) => m.id)));
      // When members only left, nobody sheds (every share rises): free records, theirs, may be
      // searched for at once instead of a scan later — even when a member joined shortly before
      // (a leave right after a join waited out the join's hold for a whole scan period).
      const onlyLeft = !wantedChanged && newcomers.size === 0 && members.length < this.view.size;
      this.membersGrewAt = onlyLeft ? -Infinity : this.clock.monotonic();
      this.view = new Set(members.map((m) => m.id));
    }
    const assignment = this.assignment;
    const share = this.balance
      ? Math.min(this.maxLeases, assignment.shares.get(this.owner) ?? 0)
      : this.maxLeases;
    this.fair = assignment.fair?.get(this.owner) ?? 0;
    if (newView) {
      this.report.members(assignment.members, share);
      this.emit('members', assignment.members, share);
    }
    this.share = share;
    // Leases already being handed over are decided: a scan while they go must not shed again.
    const held = new Map(
      this.held()
        .filter((lease) => !this.runner.isLeaving(lease))
        .map((lease) => [lease.resource, lease]),
    );
    const decided: Plan = this.weighted
      ? planWeighted({
          me: this.owner,
          wanted: this.wanted,
          held: [...held.keys()],
          assignment,
          newcomers,
          weightOf: (r) => this.loads.weightOf(r),
          fair: this.fair,
          tolerance: this.tolerance,
          limit: this.maxLeases,
          maxShed: this.maxMovesPerScan,
          balance: this.balance,
        })
      : plan({
          me: this.owner,
          wanted: this.wanted,
          held: [...held.keys()],
          assignment,
          newcomers,
          share: this.share,
          balance: this.balance,
        });
    void this.runner.handOff(
      decided.drop.map((r) => held.get(r)!),
      'unwanted',
    );
    void this.runner.handOff(
      decided.shed.map((r) => held.get(r)!),
      'balance',
    );
    const room = (): number => this.room();
    const now = this.clock.monotonic();
    const recent = now - 0.8 * this.scanMs();
    for (const [resource, at] of this.refusedAt) if (at < recent) this.refusedAt.delete(resource);
    if (decided.deficit > 0) {
      const untried = decided.candidates.filter((r) => !this.refusedAt.has(r));
      await this.taker.take(untried, room);
    }
    // Still short: what the store announced free lately (others shedding for this worker, before
    // it had a share to take them with), before a search of every record.
    for (const [resource, at] of this.freedAt) if (at < recent) this.freedAt.delete(resource);
    for (const [resource, at] of this.freeSince)
      if (at < now - 4 * this.scanMs() || held.has(resource)) this.freeSince.delete(resource);
    if (this.short() && this.freedAt.size > 0) {
      const freed = [...this.freedAt.keys()].filter(
        (r) => this.wanted.has(r) && !held.has(r) && !this.client.lease(r),
      );
      this.freedAt.clear();
      // Most of what was announced free is taken by its assigned worker at once: trying all of it,
      // a batch of `room` at a time, cost a leave on etcd several seconds of refusals (1,300
      // announced, 39 short). A couple of batches' worth; the search finds the rest.
      const few = this.fitting(shuffle(freed)).slice(0, Math.max(16, 2 * room()));
      await this.taker.take(few, room);
    }
    // Searching every record for free ones waits until the others have had a scan to shed what
    // is over their shares (it would mostly find nothing), and happens at most once per scan period.
    // When weighing, workers whose weights disagree for a while (a rolling change of the weight
    // option, say) can each leave a free resource to the other: a few workers a scan search even
    // when not short, and take what stayed free (see `fitting`), as the membership is sampled.
    const sampled = this.weighted && Math.random() * this.view.size < FULL_READS_PER_SCAN;
    if ((this.short() || sampled) && this.membersGrewAt < recent && this.searchedAt < recent) {
      this.searchedAt = now;
      const { asked, taken } = await this.takeFree(room);
      // Free records found and asked for, some refused, and still short: other workers took them
      // first (a leaver's leases, announced to every worker at once). Others may still be free:
      // search again shortly rather than at the next scan period.
      if (taken < asked && this.short()) {
        this.searchedAt = -Infinity;
        return Math.round(Math.min(this.client.heartbeatMs / 2, 500) * (0.5 + Math.random()));
      }
    }
    const deficit = this.weighted ? decided.deficit : Math.max(0, room());
    const interval = this.nextInterval();
    const settled = deficit === 0 && decided.shed.length === 0;
    return settled ? interval : Math.min(interval, 2 * this.client.heartbeatMs);
  }

  /**
   * Fills a deficit the assigned resources could not: finds free wanted resources anywhere.
   * Resolves to how many free ones it asked for and how many of those it took.
   */
  private async takeFree(room: () => number): Promise<{ asked: number; taken: number }> {
    if (this.wanted.size === 0) return { asked: 0, taken: 0 };
    const storeNow = this.storeNow();
    const skewMs = this.client.maxClockSkewMs;
    const found = await findFree({
      store: this.store,
      prefix: commonPrefix(this.wantedList),
      wanted: this.wanted,
      skip: new Set(this.held().map((l) => l.resource)),
      enough: 2 * room(),
      isFree: (record) => {
        const free = !isLive(record, storeNow, skewMs);
        if (free && record.expiresAt > 0) this.noteHolder(record); // expired, not released
        return free;
      },
      pageSize: PAGE,
    });
    for (const record of found.live) {
      this.noteHolder(record);
      this.timers.armTakeover(record);
    }
    const candidates = this.fitting(shuffle(found.free));
    const asked = Math.min(candidates.length, Math.max(0, room()));
    const taken = await this.taker.take(candidates, room);
    return { asked, taken };
  }

  /**
   * How many more leases this worker takes now: up to its share when counting leases; when
   * weighing, up to `maxLeases` (what it takes beyond its assigned resources is chosen by `fitting`).
   */
  private room(): number {
    return (
      (this.weighted ? this.maxLeases : this.share) - this.heldCount() + this.runner.leavingCount()
    );
  }

  /** Whether this worker would take resources not assigned to it: below its share, or its fair load. */
  private short(): boolean {
    if (this.room() <= 0) return false;
    return !this.weighted || this.keptLoad() < this.fair;
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
    if (!this.weighted) return candidates;
    let load = this.keptLoad();
    const now = this.clock.monotonic();
    const out: string[] = [];
    for (const resource of candidates) {
      const w = this.loads.weightOf(resource);
      const since = this.freeSince.get(resource);
      if (load + w > this.fair && (since === undefined || now - since < this.scanMs() / 2)) {
        if (since === undefined) this.freeSince.set(resource, now);
        continue;
      }
      out.push(resource);
      load += w;
    }
    return out;
  }

  /** The weight of the wanted resources held, leases being handed over not counted. */
  private keptLoad(): number {
    let load = 0;
    for (const lease of this.held())
      if (!this.runner.isLeaving(lease) && this.wanted.has(lease.resource))
        load += this.loads.weightOf(lease.resource);
    return load;
  }

  /**
   * Publishes this worker's load reports in its membership record when one moved by more than the
   * tolerance (at most once per membership renewal), then announces it so peers read it.
   */
  private async publishLoads(): Promise<void> {
    const member = this.member;
    if (!member || member.isTerminal || this.publishing || this.stopping) return;
    const next = this.loads.toPublish(this.held().map((lease) => lease.resource));
    if (next === undefined) return;
    this.publishing = true;
    try {
      await member.writeData(next.text);
      this.loads.published(next.loads);
      this.requestReconcile();
      await this.memberView.announce(1);
    } catch {
      // Tried again at the next renewal: what was not written is still news then.
    } finally {
      this.publishing = false;
    }
  }

  /**
   * The scan period as scans run: `reconcileMs`, but never longer than a healthy holder's renewal
   * leaves a record unexpired. What is remembered "for a scan" (refusals, announced releases, the
   * wait after a join) is measured in it, not in a `reconcileMs` the scans never wait.
   */
  private scanMs(): number {
    return Math.max(
      10,
      Math.min(this.reconcileMs, this.client.ttlMs - this.client.heartbeatMs * 1.25),
    );
  }

  /** The jittered scan period, never longer than a healthy holder's renewal leaves a record unexpired. */
  private nextInterval(): number {
    const jittered = this.reconcileMs * (0.8 + Math.random() * 0.4);
    return Math.max(
      10,
      Math.round(Math.min(jittered, this.client.ttlMs - this.client.heartbeatMs * 1.25)),
    );
  }

  /**
   * A wanted resource became free (released, or its record expired): take it if it is assigned to
   * this worker, or if this worker is short of its share. Takes are gathered into batches.
   */
  private released(resource: string): void {
    if (this.stopping || this.client.lease(resource)) return;
    const mine = this.assignment?.targetOf.get(resource) === this.owner;
    const takes = mine || (this.short() && this.fitting([resource]).length === 1);
    if (this.wanted.has(resource) && takes) this.taker.soon(resource, () => this.room());
    // Before the first scan the wanted set is not known yet: every announced resource counts.
    else if ((this.wanted.size === 0 || this.wanted.has(resource)) && this.freedAt.size < FREED_MAX)
      this.freedAt.set(resource, this.clock.monotonic());
  }

  private async resolveWanted(): Promise<string[]> {
    const resources = this.options.resources;
    return checkWanted(
      typeof resources === 'function' ? await resources() : resources,
      !this.layout,
    );
  }

  /** Starts the work of a lease just taken, unless it is not wanted (any more). */
  private begin(lease: HeldLease): void {
    this.takeovers.granted(lease);
    if (this.stopping || !this.wanted.has(lease.resource)) {
      void lease.release().catch(() => undefined);
      return;
    }
    this.runner.start(lease);
  }

  private reconcileFailed(error: unknown): void {
    this.report.reconcileFailed(error);
    this.emit('reconcile-failed', error);
  }

  /** A record of a resource seen held (or left expired) by someone: its holder, should we take it over. */
  private noteHolder(record: LeaseRecord): void {
    if (this.wanted.has(record.resource)) this.takeovers.seen(record);
  }

  private leaseLost(lease: HeldLease, error: LeaseError): void {
    if (lease === this.member) {
      this.requestReconcile();
      return;
    }
    this.emit('lost', lease, error);
    try {
      this.options.onLost?.(lease, error);
    } catch (failure) {
      process.nextTick(() => {
        throw failure;
      });
    }
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
