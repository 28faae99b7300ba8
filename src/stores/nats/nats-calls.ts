import { withDeadline } from '../../core/deadline.js';
import type { LeaseBatches, LeaseTransitions } from '../../core/delegating-store.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import type { LeaseData } from '../../core/lease-data.js';
import type { AcquireOutcome } from '../../core/store.js';
import { acquireEach, runBatch } from './nats-batch.js';
import type { NatsKv } from './nats-driver.js';
import { noAnswer } from './nats-errors.js';
import { listRecords } from './nats-list.js';
import type { ResolvedNatsOptions } from './nats-options.js';
import type { NatsTransitions } from './nats-transitions.js';

/**
 * One transition of one resource within `timeoutMs`, its reads and retries included, counted
 * from `startedAt` (`performance.now()`) when a batch's one-write attempt came first.
 */
export type Bounded = <T>(
  operation: string,
  fn: () => Promise<T>,
  startedAt?: number,
) => Promise<T>;

/**
 * The deadline of a store's calls on `bucket`: a call with no answer in time fails with a
 * retryable `STORE_UNAVAILABLE` (see `noAnswer`), though a write it sent may still take effect.
 */
export function callDeadline(bucket: string, timeoutMs: number): Bounded {
  return (operation, fn, startedAt = performance.now()) => {
    const left = Math.max(0, startedAt + timeoutMs - performance.now());
    return withDeadline(fn(), left, () => noAnswer(operation, bucket, timeoutMs));
  };
}

/**
 * The store's calls: `NatsTransitions` within the call deadline (see `callDeadline`), and the
 * batches, one conditional write per lease pipelined on the connection (see nats-batch.ts).
 */
export class NatsCalls implements LeaseTransitions, LeaseBatches {
  constructor(
    private readonly records: NatsTransitions,
    private readonly kv: NatsKv,
    private readonly options: ResolvedNatsOptions,
    /** Runs one call within `timeoutMs` (see `callDeadline`). */
    private readonly bounded: Bounded,
  ) {}

  async tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    return (await this.bounded('tryAcquire', () => this.records.acquire(resource, owner, ttlMs)))
      .lease;
  }

  renew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    return this.bounded('renew', () => this.records.renew(lease, ttlMs));
  }

  release(lease: LeaseRef): Promise<boolean> {
    return this.bounded('release', () => this.records.release(lease));
  }

  writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.bounded('writeData', () => this.records.writeData(lease, data));
  }

  renewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    return this.bounded('renew', () => this.records.renew(lease, ttlMs, data));
  }

  releaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.bounded('release', () => this.records.release(lease, data));
  }

  /** One read. */
  async get(resource: string): Promise<LeaseRecord | null> {
    const stored = await this.bounded('get', () => this.records.read(resource));
    return stored.stored?.record ?? null;
  }

  /**
   * One compare-and-set per resource, `concurrency` in flight; a record leasehold does not write
   * fails the whole batch with `RECORD_INVALID`, the leases granted meanwhile given back first
   * (see `acquireEach`).
   */
  async acquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return acquireEach(
      resources,
      this.options.concurrency,
      (resource) => this.bounded('acquireMany', () => this.records.acquire(resource, owner, ttlMs)),
      (granted) => this.releaseMany(granted),
    );
  }

  renewMany(leases: readonly Lease[], ttlMs: number | undefined): Promise<(Lease | null)[]> {
    return runBatch(leases, this.options.concurrency, {
      send: (lease, done) => this.records.sendRenew(lease, ttlMs, done),
      full: (lease, startedAt) =>
        this.bounded('renewMany', () => this.records.renew(lease, ttlMs), startedAt),
    });
  }

  releaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return runBatch(leases, this.options.concurrency, {
      send: (lease, done) => this.records.sendRelease(lease, done),
      full: (lease, startedAt) =>
        this.bounded('releaseMany', () => this.records.release(lease), startedAt),
    });
  }

  /** One consumer stream of every value under the prefix, sorted here (see `listRecords`). */
  list(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    return listRecords(this.kv, { prefix, limit, after }, this.options);
  }
}
