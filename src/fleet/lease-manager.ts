import { EventEmitter } from 'node:events';
import { safeEmit } from '../core/safe-emit.js';
import { ErrorCode, LeaseError } from '../core/errors.js';
import { checkResource } from '../core/options.js';
import type { LeaseStore } from '../core/store.js';
import { systemClock, type Clock } from '../core/time.js';
import type { HeldLease } from '../client/held-lease.js';
import { LeaseClient } from '../client/lease-client.js';
import { ExpiryTimers } from './expiry-timers.js';
import { FleetReporter } from './fleet-reporter.js';
import { checkStopOptions, KeepAlive, onShutdownSignals, type StopOptions } from './lifecycle.js';
import { TakeoverTracker } from './takeover-tracker.js';
import {
  checkManagerOptions,
  MANAGER_DEFAULTS,
  FLEET_LAYOUT,
  type FleetLayout,
  type LeaseManagerEvents,
  type LeaseManagerOptions,
} from './manager-options.js';
import { checkWeight, LoadBook } from './load-book.js';
import { membersPrefix } from './members.js';
import { Membership } from './membership.js';
import { ReconcileLoop } from './reconcile-loop.js';
import { Reconciler } from './reconciler.js';
import { renewalsBehind, Taker } from './taker.js';
import { WorkRunner, type WorkHost } from './work-runner.js';
import { settleWithin } from './util.js';

export type { LeaseManagerEvents } from './manager-options.js';
export type { StopOptions } from './lifecycle.js';

/**
 * Keeps a set of wanted resources owned by a fleet of workers: each resource by exactly one live
 * worker, reclaimed at expiry when a worker dies, handed over gracefully on shutdown, and shared
 * evenly (every count within one of W/N) when `balance` is on. Each worker reads the membership
 * and the records of what it tries to take, never every record at every scan.
 *
 * The manager wires the parts that do the work: its `Membership` in the fleet, the
 * `ReconcileLoop` that schedules passes, the `Reconciler` that decides and acts at each pass, the
 * `Taker` that takes leases in batches, the `WorkRunner` that runs and hands over their work, and
 * the `ExpiryTimers` of records nobody renews.
 */
export class LeaseManager extends EventEmitter<LeaseManagerEvents> {
  /** This worker's id in lease records and in the membership. */
  readonly owner: string;
  private readonly client: LeaseClient;
  /** The store the manager's client holds its leases in. */
  protected readonly store: LeaseStore;
  private readonly clock: Clock;
  private readonly options: LeaseManagerOptions;
  /** Resource weights: the `weight` option and the loads workers report. */
  private readonly loads: LoadBook;
  private readonly taker: Taker;
  private readonly report: FleetReporter;
  /** Tells takeovers of expired leases apart, for the diagnostics channels and the logger. */
  private readonly takeovers: TakeoverTracker;
  private readonly membership: Membership;
  private readonly reconciler: Reconciler;
  private readonly loop: ReconcileLoop;
  private readonly runner: WorkRunner;
  private readonly timers: ExpiryTimers;
  private readonly keepAlive = new KeepAlive();
  private unwatch: (() => void) | undefined;
  private started = false;
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
    const client = (this.client = new LeaseClient({
      store: options.store,
      owner: options.owner,
      ttlMs: options.ttlMs,
      heartbeatMs: options.heartbeatMs,
      maxClockSkewMs: options.maxClockSkewMs,
      clock: options.clock,
      logger: options.logger,
    }));
    this.owner = client.owner;
    const store = (this.store = options.store);
    const clock = (this.clock = options.clock ?? systemClock);
    const { ttlMs, heartbeatMs } = client;
    const tolerance = options.balanceTolerance ?? MANAGER_DEFAULTS.balanceTolerance;
    const now = (): number => clock.monotonic();
    const loads = (this.loads = new LoadBook(this.owner, options.weight, tolerance, now, ttlMs));
    const group = options.group ?? MANAGER_DEFAULTS.group;
    const report = (this.report = new FleetReporter(this.owner, group, clock, options.logger));
    const takeovers = (this.takeovers = new TakeoverTracker(this.owner, report));
    const reconcileMs = options.reconcileMs ?? MANAGER_DEFAULTS.reconcileMs;
    const stopping = (): boolean => this.stopping !== undefined;
    const loop = (this.loop = new ReconcileLoop({
      clock,
      reconcileMs,
      ttlMs,
      heartbeatMs,
      pass: () => this.reconciler.pass(),
      passed: () => report.load(() => this.loadStatus(), this.membership.size),
      failed: (error) => this.reconcileFailed(error),
      stopping,
    }));
    const taker = (this.taker = new Taker({
      client,
      clock,
      batchSize: options.batchSize ?? MANAGER_DEFAULTS.batchSize,
      maxInFlight: options.maxInFlight ?? MANAGER_DEFAULTS.maxInFlight,
      onAcquired: (lease) => this.runner.begin(lease),
      slowMs: Math.max(250, heartbeatMs / 4),
      busy: () => renewalsBehind(client, clock),
      recheckMs: Math.max(10, Math.round(heartbeatMs / 4)),
      onRefused: (resource, holder) => this.reconciler.refused(resource, holder),
      onError: (error) => !this.stopping && this.reconcileFailed(error),
    }));
    const emit: WorkHost['emit'] = (event, ...args) => void this.emit(event, ...args);
    const failed = (error: unknown): void => this.reconcileFailed(error);
    const runner = (this.runner = new WorkRunner({
      client,
      clock,
      report,
      work: options.onAcquired,
      onLost: options.onLost,
      emit,
      failed,
      granted: (lease) => takeovers.granted(lease),
      wants: (resource) => this.reconciler.wants(resource),
      stopping,
    }));
    const graceMs = client.maxClockSkewMs + (store.expiryLagMs ?? 0);
    const storeNow = (): number => this.membership.storeNow();
    const timers = (this.timers = new ExpiryTimers(
      clock,
      { ttlMs, heartbeatMs, graceMs, storeNow },
      (resource, member) => {
        if (!member) return this.reconciler.released(resource);
        this.membership.markDirty();
        loop.request();
      },
    ));
    // What the membership and the reconciler both use.
    const shared = {
      client,
      store,
      clock,
      layout,
      loads,
      takeovers,
      timers,
      maxLeases: options.maxLeases ?? Infinity,
      stopping,
      held: () => this.held(),
      heldCount: () => this.heldCount(),
    };
    const membership = (this.membership = new Membership({
      ...shared,
      prefix: layout?.membersPrefix ?? membersPrefix(group),
      capacity: options.capacity ?? 1,
      settleMs: options.settleMs ?? Math.min(heartbeatMs, MANAGER_DEFAULTS.settleMaxMs),
      changed: () => loop.request(),
      reconciling: () => loop.running,
    }));
    this.reconciler = new Reconciler({
      ...shared,
      membership,
      report,
      taker,
      runner,
      emit,
      tolerance,
      resources: options.resources,
      balance: options.balance ?? MANAGER_DEFAULTS.balance,
      maxMovesPerScan: options.maxMovesPerScan ?? Infinity,
      scanMs: loop.scanMs,
      nextInterval: () => loop.nextInterval(),
    });
    client.on('lost', (lease, error) => {
      loads.forget(lease.resource);
      // A lost membership is joined again at the next pass.
      if (lease === membership.lease) loop.request();
      else runner.lost(lease, error);
    });
    client.on('released', (lease) => {
      if (lease === membership.lease) return;
      loads.forget(lease.resource);
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
    this.keepAlive.hold();
    const { store, membership, reconciler } = this;
    if (store.capabilities.watch && store.watch) {
      this.unwatch = store.watch('', (event) => {
        if (membership.covers(event.resource)) this.loop.request();
        else if (event.type !== 'acquired') reconciler.released(event.resource);
        // Taken again (by anyone): no longer worth trying as announced free.
        else reconciler.takenAgain(event.resource);
      });
    }
    try {
      // A bad wanted set or weight fails start() itself.
      const wanted = await reconciler.resolveWanted();
      if (this.options.weight !== undefined) this.loads.weights(wanted);
      await membership.join();
      await membership.settle();
      // A bucketed worker refuses here, so start() itself fails (one more membership read).
      if (this.layout) membership.checkLayout(await membership.current());
    } catch (error) {
      this.unwatch?.();
      this.keepAlive.release();
      this.timers.clear(true);
      await this.client.close().catch(() => undefined);
      throw error;
    }
    // Bulk work that fails from here on is reported (`reconcile-failed`) and retried with backoff.
    await this.loop.start();
    this.report.started(this.held().length);
  }

  /** Lets the process exit while the manager runs (as `server.unref()` does). Returns the manager. */
  unref(): this {
    this.keepAlive.unref();
    this.client.unref();
    return this;
  }

  /** Undoes `unref()`: the running manager keeps the process alive again. */
  ref(): this {
    this.keepAlive.ref();
    this.client.ref();
    return this;
  }

  /** The held lease of a wanted resource, if this worker holds it (not yet released or lost). */
  protected leaseOf(resource: string): HeldLease | undefined {
    const lease = this.client.lease(resource);
    return lease === this.membership.lease ? undefined : lease;
  }

  /** Leases held for wanted resources (the membership lease not included). */
  held(): HeldLease[] {
    const member = this.membership.lease;
    return this.client.held().filter((lease) => lease !== member);
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
    if (!lease || lease === this.membership.lease) return false;
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
    return this.reconciler.loadStatus();
  }

  /**
   * Aborts the work of every lease, waits for it to settle (at most `timeoutMs`), then releases
   * everything with one `releaseMany`, so peers watching the store take over at once.
   */
  stop(options: StopOptions = {}): Promise<void> {
    const timeoutMs = checkStopOptions(options);
    this.stopping ??= this.shutdown(timeoutMs);
    return this.stopping;
  }

  /** `await using manager = …` stops it (with the default `timeoutMs`) at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** Stops gracefully on SIGTERM and SIGINT, then lets the signal take its usual course. Returns the uninstaller. */
  installShutdownHandlers(signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): () => void {
    return onShutdownSignals(() => this.stop(), signals);
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    this.loop.cancel();
    this.timers.clear(true);
    this.taker.stop();
    this.reconciler.stop();
    this.unwatch?.();
    try {
      await settleWithin([this.loop.settled], timeoutMs, this.clock);
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
      this.report.load(() => ({ load: 0, fair: 0, weighted: this.reconciler.weighted }), 0);
      // Peers re-read the membership at their next scan (at once where the store can watch). One
      // attempt: a stop is not held up, and a peer announcing at the same instant or the
      // sampling tells the others as well.
      await this.membership.announce(1).catch(() => undefined);
    } finally {
      this.keepAlive.release();
      this.takeovers.clear();
    }
  }

  /** How many leases are held for wanted resources (the membership lease not counted). */
  private heldCount(): number {
    const member = this.membership.lease;
    return this.client.size - (member && !member.isTerminal ? 1 : 0);
  }

  private reconcileFailed(error: unknown): void {
    this.report.reconcileFailed(error);
    this.emit('reconcile-failed', error);
  }
}
