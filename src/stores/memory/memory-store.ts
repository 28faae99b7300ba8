import { isLive, type Lease, type LeaseRecord, type LeaseRef } from '../../core/lease.js';
import {
  compareResources,
  StoreBase,
  type AcquireOutcome,
  type StoreCapabilities,
} from '../../core/store.js';
import type { Clock } from '../../core/time.js';
import { LIMITS } from '../../core/options.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import { resolveMemoryOptions, type MemoryStoreOptions } from './memory-options.js';
import type { Diagnosis } from '../../core/doctor.js';
import { diagnoseMemory } from './memory-doctor.js';

/** Leases in this process's memory: the same rules as every store, for tests and single-process use. */
export class MemoryStore extends StoreBase {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'local',
    batch: true,
    watch: false,
    atomicGroupMax: LIMITS.groupMaxSize,
    data: true,
  });
  readonly maxClockSkewMs: number;
  private readonly clock: Clock;
  private readonly records = new Map<string, LeaseRecord>();

  /** An empty store; throws `INVALID_ARGUMENT` for a bad `maxClockSkewMs`. */
  constructor(options?: MemoryStoreOptions) {
    super();
    const resolved = resolveMemoryOptions(options);
    this.clock = resolved.clock;
    this.maxClockSkewMs = resolved.maxClockSkewMs;
  }

  /** What `leasehold doctor` reports: records that live in this process only. */
  diagnose(): Promise<Diagnosis> {
    return this.guarded('diagnose', async () => diagnoseMemory());
  }

  protected async doTryAcquire(
    resource: string,
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    return this.take(resource, owner, ttlMs, this.clock.now());
  }

  /** One acquire, synchronously: the batch and group forms call it without yielding in between. */
  private take(resource: string, owner: string, ttlMs: number, now: number): Lease | null {
    const current = this.records.get(resource);
    if (current && isLive(current, now, this.maxClockSkewMs)) return null;
    // The data stays: the new holder reads what the previous ones left.
    const data = current?.data;
    const token = (current?.token ?? 0) + 1;
    const expiresAt = now + ttlMs;
    this.records.set(resource, withData({ resource, owner, token, expiresAt }, data));
    return withData({ resource, owner, token, expiresAt, ttlMs }, data);
  }

  protected async doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    const now = this.clock.now();
    return leases.map((lease) => {
      const current = this.ours(lease);
      if (!current) return null;
      const ttl = ttlMs ?? lease.ttlMs;
      const renewed: Lease = { ...current, expiresAt: now + ttl, ttlMs: ttl };
      this.records.set(lease.resource, { ...current, expiresAt: renewed.expiresAt });
      return renewed;
    });
  }

  protected async doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return leases.map((lease) => this.giveUp(lease, undefined));
  }

  /** One release, the record's data replaced when `data` is given. */
  private giveUp(lease: LeaseRef, data: LeaseData | null | undefined): boolean {
    const current = this.ours(lease);
    if (!current) return false;
    const kept = data === undefined ? current.data : data;
    this.records.set(
      lease.resource,
      withData({ resource: lease.resource, owner: '', token: current.token, expiresAt: 0 }, kept),
    );
    return true;
  }

  /** The record, if it is still this grant's (same owner and token). */
  private ours(lease: LeaseRef): LeaseRecord | undefined {
    const current = this.records.get(lease.resource);
    return current && current.owner === lease.owner && current.token === lease.token
      ? current
      : undefined;
  }

  protected override async doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const current = this.ours(lease);
    if (!current) return false;
    this.records.set(lease.resource, withData(current, data));
    return true;
  }

  protected override async doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    const current = this.ours(lease);
    if (!current) return null;
    const ttl = ttlMs ?? lease.ttlMs;
    const expiresAt = this.clock.now() + ttl;
    this.records.set(lease.resource, withData({ ...current, expiresAt }, data));
    return withData({ ...current, expiresAt, ttlMs: ttl }, data);
  }

  protected override async doReleaseWithData(
    lease: LeaseRef,
    data: LeaseData | null,
  ): Promise<boolean> {
    return this.giveUp(lease, data);
  }

  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    return this.records.get(resource) ?? null;
  }

  protected override async doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    const outcomes: AcquireOutcome[] = [];
    for (const resource of resources) {
      const lease = await this.doTryAcquire(resource, owner, ttlMs);
      const holder = lease ? undefined : this.records.get(resource);
      outcomes.push(holder ? { resource, lease, holder } : { resource, lease });
    }
    return outcomes;
  }

  protected override async doAcquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    const now = this.clock.now();
    for (const resource of resources) {
      const current = this.records.get(resource);
      if (current && isLive(current, now, this.maxClockSkewMs)) return null;
    }
    return resources.map((resource) => this.take(resource, owner, ttlMs, now)!);
  }

  protected override async doAcquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const now = this.clock.now();
    for (const resource of resources) {
      const lease = this.take(resource, owner, ttlMs, now);
      if (lease) return lease;
    }
    return null;
  }

  protected override nowEstimate(): number {
    return this.clock.now();
  }

  protected async doList(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    return [...this.records.values()]
      .filter((r) => r.resource.startsWith(prefix) && compareResources(r.resource, after) > 0)
      .sort((a, b) => compareResources(a.resource, b.resource))
      .slice(0, limit);
  }

  protected async doClose(): Promise<void> {
    this.records.clear();
  }
}
