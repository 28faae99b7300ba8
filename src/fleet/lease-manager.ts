import { EventEmitter } from 'node:events';
import { safeEmit } from '../core/safe-emit.js';
import { ErrorCode, LeaseError } from '../core/errors.js';
import type { LeaseRecord } from '../core/lease.js';
import { checkInteger, checkResource, LIMITS } from '../core/options.js';
import type { LeaseStore } from '../core/store.js';
import { systemClock, type Clock, type TimerHandle } from '../core/time.js';
import type { HeldLease } from '../client/held-lease.js';
import { LeaseClient } from '../client/lease-client.js';
import {
  checkManagerOptions,
  MANAGER_DEFAULTS,
  membersPrefix,
  type LeaseManagerOptions,
  type WantedResources,
} from './manager-options.js';
import { plan } from './plan.js';
import { settleWithin, commonPrefix } from './util.js';

export interface LeaseManagerEvents {
  acquired: [lease: HeldLease];
  lost: [lease: HeldLease, error: LeaseError];
  released: [lease: HeldLease];
  /** A lease given up so another worker can take it: `reason` is `'balance'` or `'unwanted'`. */
  handoff: [lease: HeldLease, reason: 'balance' | 'unwanted'];
  /** `onAcquired` threw or rejected; the lease is handed back so a worker can try again. */
  'work-failed': [lease: HeldLease, error: unknown];
  /** A reconcile pass failed (the store was unreachable, say); the next one is scheduled sooner. */
  'reconcile-failed': [error: unknown];
}

export interface StopOptions {
  /** How long to wait for `onAcquired` work to settle before releasing anyway. @default 10000 */
  timeoutMs?: number;
}

/**
 * Keeps a set of wanted resources owned by a fleet of workers: each resource by exactly one live
 * worker, reclaimed at expiry when a worker dies, handed over gracefully on shutdown, and shared
 * evenly when `balance` is on.
 */
export class LeaseManager extends EventEmitter<LeaseManagerEvents> {
  readonly owner: string;
  private readonly client: LeaseClient;
  private readonly store: LeaseStore;
  private readonly clock: Clock;
  private readonly resources: WantedResources;
  private readonly reconcileMs: number;
  private readonly balance: boolean;
  private readonly maxLeases: number;
  private readonly membersPrefix: string;
  private readonly onAcquired: LeaseManagerOptions['onAcquired'];
  private readonly onLost: LeaseManagerOptions['onLost'];
  private readonly work = new Map<HeldLease, Promise<void>>();
  private readonly taking = new Set<string>();
  private readonly expiryTimers = new Map<string, TimerHandle>();
  private wanted = new Set<string>();
  private target = Infinity;
  private member: HeldLease | undefined;
  private storeOffset = 0;
  private reconcileTimer: TimerHandle | undefined;
  private running: Promise<void> | undefined;
  private rerun = false;
  private unwatch: (() => void) | undefined;
  private started = false;
  private stopping: Promise<void> | undefined;

  constructor(options: LeaseManagerOptions) {
    super();
    checkManagerOptions(options);
    this.client = new LeaseClient({
      store: options.store,
      owner: options.owner,
      ttlMs: options.ttlMs,
      heartbeatMs: options.heartbeatMs,
      maxClockSkewMs: options.maxClockSkewMs,
      clock: options.clock,
    });
    this.owner = this.client.owner;
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.resources = options.resources;
    this.reconcileMs = options.reconcileMs ?? MANAGER_DEFAULTS.reconcileMs;
    this.balance = options.balance ?? MANAGER_DEFAULTS.balance;
    this.maxLeases = options.maxLeases ?? Infinity;
    this.membersPrefix = membersPrefix(options.group ?? MANAGER_DEFAULTS.group);
    this.onAcquired = options.onAcquired;
    this.onLost = options.onLost;
    this.client.on('lost', (lease, error) => this.leaseLost(lease, error));
    this.client.on('released', (lease) => lease !== this.member && this.emit('released', lease));
  }

  /** Listener errors are isolated (see `safeEmit`): they cannot break a reconcile or a handoff. */
  override emit<K extends keyof LeaseManagerEvents>(
    event: K,
    ...args: LeaseManagerEvents[K]
  ): boolean {
    return safeEmit(this, event, args);
  }

  /** Joins the fleet and runs the first reconcile; rejects if the store cannot be reached. */
  async start(): Promise<void> {
    if (this.started)
      throw new LeaseError(ErrorCode.INVALID_ARGUMENT, 'the LeaseManager was already started');
    this.started = true;
    if (this.store.capabilities.watch && this.store.watch) {
      this.unwatch = this.store.watch('', (event) => {
        if (event.resource.startsWith(this.membersPrefix)) this.requestReconcile();
        else if (this.wanted.has(event.resource) && this.heldCount() < this.target)
          void this.take(event.resource);
      });
    }
    await this.reconcile(true);
  }

  /** Leases held for wanted resources (the membership lease not included). */
  held(): HeldLease[] {
    return this.client.held().filter((lease) => lease !== this.member);
  }

  /**
   * Aborts the work of every lease, waits for it to settle (at most `timeoutMs`), then releases
   * everything with one `releaseMany`, so peers watching the store take over at once.
   */
  stop(options: StopOptions = {}): Promise<void> {
    const timeoutMs = checkInteger('timeoutMs', options.timeoutMs ?? 10_000, 0, LIMITS.ttlMaxMs);
    this.stopping ??= this.shutdown(timeoutMs);
    return this.stopping;
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
    this.clearExpiryTimers();
    this.unwatch?.();
    await settleWithin([this.running], timeoutMs, this.clock);
    for (const lease of this.held()) lease.revoke('the manager is stopping');
    await settleWithin([...this.work.values()], timeoutMs, this.clock);
    await this.client.close();
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
    if (this.stopping) return;
    if (this.running) this.rerun = true;
    else void this.reconcile(false);
  }

  private async reconcile(first: boolean): Promise<void> {
    if (this.stopping) return;
    this.reconcileTimer?.clear();
    let next: number;
    const pass = this.pass(first);
    this.running = pass.then(
      () => undefined,
      () => undefined,
    );
    try {
      next = await pass;
    } catch (error) {
      if (first) {
        this.running = undefined;
        this.unwatch?.();
        await this.client.close().catch(() => undefined);
        throw error;
      }
      this.emit('reconcile-failed', error);
      next = this.client.heartbeatMs;
    }
    this.running = undefined;
    if (this.stopping) return;
    if (this.rerun) {
      this.rerun = false;
      next = 0;
    }
    this.reconcileTimer = this.clock.setTimeout(() => void this.reconcile(false), next);
  }

  /** One reconcile pass; returns the delay until the next one. */
  private async pass(first: boolean): Promise<number> {
    const wanted = await this.resolveWanted();
    this.wanted = new Set(wanted);
    if (!this.member || this.member.isTerminal) {
      this.member = (await this.client.tryAcquire(this.membersPrefix + this.owner)) ?? undefined;
      if (!this.member && first) {
        throw new LeaseError(
          ErrorCode.INVALID_ARGUMENT,
          `another live worker uses the owner id ${JSON.stringify(this.owner)}`,
        );
      }
      if (!this.member) {
        // Our own membership lapsed here before it lapses at the store (the holder gives up
        // drift + skew early): wait for the record to expire, then join again.
        throw new LeaseError(
          ErrorCode.LEASE_UNAVAILABLE,
          `the membership lease of ${JSON.stringify(this.owner)} was lost and is not free again yet; retrying`,
          { retryable: true },
        );
      }
      this.observe(this.member);
      this.member.on('renewed', (lease) => this.observe(lease));
    }
    const prefix = commonPrefix(wanted);
    const [records, memberRecords] = await Promise.all([
      wanted.length === 0 ? [] : this.store.list({ prefix, limit: LIMITS.listMaxLimit }),
      this.store.list({ prefix: this.membersPrefix, limit: LIMITS.listMaxLimit }),
    ]);
    const storeNow = this.storeNow();
    const skewMs = this.client.maxClockSkewMs;
    const members = memberRecords
      .filter((r) => r.owner !== '' && storeNow <= r.expiresAt + skewMs)
      .map((r) => r.owner);
    const byResource = new Map<string, LeaseRecord>(
      records.filter((r) => this.wanted.has(r.resource)).map((r) => [r.resource, r]),
    );
    const interval = this.nextInterval();
    const held = new Map(this.held().map((lease) => [lease.resource, lease]));
    const decided = plan({
      me: this.owner,
      wanted,
      records: byResource,
      members,
      held: new Set(held.keys()),
      storeNow,
      skewMs,
      // Up to the next scan, and short of where a healthy holder's record sits (≥ ttl − heartbeat
      // ahead): only records that stopped being renewed get a takeover timer.
      horizonMs: interval + this.client.heartbeatMs / 8,
      maxLeases: this.maxLeases,
      balance: this.balance,
    });
    this.target = decided.target;
    for (const resource of decided.drop) void this.handOff(held.get(resource)!, 'unwanted');
    for (const resource of decided.shed) void this.handOff(held.get(resource)!, 'balance');
    await runLimited(decided.acquire, 8, (resource) => this.take(resource));
    this.armExpiryTimers(decided.expiring);
    return decided.unbalanced ? Math.min(interval, 2 * this.client.heartbeatMs) : interval;
  }

  /** The jittered scan period, never longer than a healthy holder's renewal leaves a record unexpired. */
  private nextInterval(): number {
    const jittered = this.reconcileMs * (0.8 + Math.random() * 0.4);
    return Math.max(
      10,
      Math.round(Math.min(jittered, this.client.ttlMs - this.client.heartbeatMs * 1.25)),
    );
  }

  private async resolveWanted(): Promise<string[]> {
    const list = typeof this.resources === 'function' ? await this.resources() : this.resources;
    if (!Array.isArray(list))
      throw new LeaseError(
        ErrorCode.INVALID_ARGUMENT,
        'resources() must return an array of resource names',
      );
    const unique = [...new Set<string>(list)];
    for (const resource of unique) {
      checkResource(resource);
      if (resource.startsWith('leasehold/members/')) {
        throw new LeaseError(
          ErrorCode.INVALID_ARGUMENT,
          `resource ${JSON.stringify(resource)} is under the reserved prefix leasehold/members/`,
        );
      }
    }
    return unique;
  }

  private armExpiryTimers(expiring: readonly { resource: string; at: number }[]): void {
    this.clearExpiryTimers();
    const now = this.storeNow();
    for (const { resource, at } of expiring) {
      const jitter = Math.random() * Math.min(50, this.client.heartbeatMs / 10);
      const lag = this.store.expiryLagMs ?? 0;
      const timer = this.clock.setTimeout(
        () => {
          this.expiryTimers.delete(resource);
          void this.take(resource);
        },
        at + lag - now + 1 + jitter,
      );
      this.expiryTimers.set(resource, timer);
    }
  }

  private clearExpiryTimers(): void {
    for (const timer of this.expiryTimers.values()) timer.clear();
    this.expiryTimers.clear();
  }

  /** Tries to acquire one wanted resource and starts its work. */
  private async take(resource: string): Promise<void> {
    if (this.stopping || this.taking.has(resource) || !this.wanted.has(resource)) return;
    if (this.heldCount() >= this.maxLeases || this.client.lease(resource)) return;
    this.taking.add(resource);
    let lease: HeldLease | null;
    try {
      lease = await this.client.tryAcquire(resource);
    } catch (error) {
      if (!this.stopping) this.emit('reconcile-failed', error);
      return;
    } finally {
      this.taking.delete(resource);
    }
    if (!lease) return;
    if (this.stopping) {
      await lease.release().catch(() => undefined);
      return;
    }
    this.emit('acquired', lease);
    if (this.onAcquired) {
      const acquired = lease;
      const running = Promise.resolve()
        .then(() => this.onAcquired!(acquired))
        .catch((error: unknown) => {
          this.emit('work-failed', acquired, error);
          if (!acquired.isTerminal) return acquired.release().catch(() => undefined);
        })
        .finally(() => this.work.delete(acquired));
      this.work.set(acquired, running);
    }
  }

  /** Aborts a lease's work, lets it settle, then releases the lease for another worker. */
  private async handOff(lease: HeldLease, reason: 'balance' | 'unwanted'): Promise<void> {
    lease.revoke(reason === 'balance' ? 'handed to a less loaded worker' : 'no longer wanted');
    await settleWithin([this.work.get(lease)], this.client.ttlMs / 2, this.clock);
    if (lease.isTerminal) return;
    this.emit('handoff', lease, reason);
    await lease.release().catch((error: unknown) => this.emit('reconcile-failed', error));
  }

  private leaseLost(lease: HeldLease, error: LeaseError): void {
    if (lease === this.member) {
      this.requestReconcile();
      return;
    }
    this.emit('lost', lease, error);
    try {
      this.onLost?.(lease, error);
    } catch (failure) {
      process.nextTick(() => {
        throw failure;
      });
    }
  }
}

async function runLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
