import type { Lease, LeaseRecord, LeaseRef } from './lease.js';
import type { LeaseData } from './lease-data.js';
import { StoreBase, type AcquireOutcome } from './store.js';

/**
 * A store's calls on one lease (and `get`), each reached once `StoreBase` has checked its input
 * and found the store open: the compare-and-sets and the read, nothing else.
 */
export interface LeaseTransitions {
  tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null>;
  renew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null>;
  release(lease: LeaseRef): Promise<boolean>;
  writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean>;
  renewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null>;
  releaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean>;
  get(resource: string): Promise<LeaseRecord | null>;
  /** The atomic group; without it, `StoreBase` takes the members one by one in resource order. */
  acquireAll?(resources: readonly string[], owner: string, ttlMs: number): Promise<Lease[] | null>;
  /** One pick among candidates; without it, `StoreBase` tries the first, then looks with `list`. */
  acquireFirst?(resources: readonly string[], owner: string, ttlMs: number): Promise<Lease | null>;
}

/** A store's calls on many leases and `list`, each reached as `LeaseTransitions`' are. */
export interface LeaseBatches {
  acquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]>;
  renewMany(leases: readonly Lease[], ttlMs: number | undefined): Promise<(Lease | null)[]>;
  releaseMany(leases: readonly LeaseRef[]): Promise<boolean[]>;
  list(prefix: string, limit: number, after: string): Promise<LeaseRecord[]>;
}

/**
 * The template of the built-in stores: `StoreBase` (input checks, the closed state, batch pieces,
 * error mapping) with each `do…` operation handed to the store's `transitions` or `batches`, so a
 * store's own class keeps only what is its own (opening, capabilities, `watch`, `diagnose`,
 * `close`, error mapping). A store may still override an operation where it routes it itself.
 */
export abstract class DelegatingStore extends StoreBase {
  /** @internal The store's calls on one lease. */
  protected abstract readonly transitions: LeaseTransitions;
  /** @internal The store's calls on many leases, and `list`. */
  protected abstract readonly batches: LeaseBatches;

  protected doTryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    return this.transitions.tryAcquire(resource, owner, ttlMs);
  }

  protected override doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return this.batches.acquireMany(resources, owner, ttlMs);
  }

  protected override doAcquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    return this.transitions.acquireAll
      ? this.transitions.acquireAll(resources, owner, ttlMs)
      : super.doAcquireAll(resources, owner, ttlMs);
  }

  protected override doAcquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    return this.transitions.acquireFirst
      ? this.transitions.acquireFirst(resources, owner, ttlMs)
      : super.doAcquireFirst(resources, owner, ttlMs);
  }

  protected override doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    return this.transitions.renew(lease, ttlMs);
  }

  protected override doRelease(lease: LeaseRef): Promise<boolean> {
    return this.transitions.release(lease);
  }

  protected override doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.transitions.writeData(lease, data);
  }

  protected override doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    return this.transitions.renewWithData(lease, ttlMs, data);
  }

  protected override doReleaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.transitions.releaseWithData(lease, data);
  }

  protected doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    return this.batches.renewMany(leases, ttlMs);
  }

  protected doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return this.batches.releaseMany(leases);
  }

  protected doGet(resource: string): Promise<LeaseRecord | null> {
    return this.transitions.get(resource);
  }

  protected doList(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    return this.batches.list(prefix, limit, after);
  }
}
