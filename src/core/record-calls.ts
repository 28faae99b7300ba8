import type { LeaseBatches, LeaseTransitions } from './delegating-store.js';
import type { Lease, LeaseRecord, LeaseRef } from './lease.js';
import type { LeaseData } from './lease-data.js';
import { runInOrder } from './run-in-order.js';
import type { AcquireOutcome } from './store.js';

/**
 * The calls of a store whose every transition is one conditional write on one record, with no
 * write across records (DynamoDB's `UpdateItem`, S3's conditional PUT): what `recordTransitions`
 * and `recordBatches` make its `LeaseTransitions` and `LeaseBatches` of.
 */
export interface RecordCalls {
  /** One acquire: the lease, or `null` with the live record as `holder` where the store tells. */
  acquire(
    resource: string,
    owner: string,
    ttlMs: number,
    operation: string,
  ): Promise<AcquireOutcome>;
  /** One renewal; with `data` (not `undefined`), the data is written in the same write. */
  renew(lease: Lease, ttlMs: number | undefined, data?: LeaseData | null): Promise<Lease | null>;
  /** One release; with `data` (not `undefined`), the data is written in the same write. */
  release(lease: LeaseRef, data?: LeaseData | null): Promise<boolean>;
  writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean>;
  get(resource: string): Promise<LeaseRecord | null>;
}

/** The single-lease calls of `records`, each its one write (or read). */
export function recordTransitions(records: RecordCalls): LeaseTransitions {
  return {
    tryAcquire: async (resource, owner, ttlMs) =>
      (await records.acquire(resource, owner, ttlMs, 'tryAcquire')).lease,
    renew: (lease, ttlMs) => records.renew(lease, ttlMs),
    release: (lease) => records.release(lease),
    writeData: (lease, data) => records.writeData(lease, data),
    renewWithData: (lease, ttlMs, data) => records.renew(lease, ttlMs, data),
    releaseWithData: (lease, data) => records.release(lease, data),
    get: (resource) => records.get(resource),
  };
}

/**
 * Batches of one write per resource, up to `concurrency` in flight, answered in input order (see
 * `runInOrder`): a transaction across records would fail as a whole when one condition fails. After
 * a failure no new write starts, and the first error is thrown once those in flight have settled:
 * leases they granted are then unknown to the caller and lapse at their TTL.
 */
export function recordBatches(
  records: RecordCalls,
  concurrency: number,
  list: (prefix: string, limit: number, after: string) => Promise<LeaseRecord[]>,
): LeaseBatches {
  return {
    acquireMany: (resources, owner, ttlMs) =>
      runInOrder(
        resources,
        (resource) => resource,
        concurrency,
        (resource) => records.acquire(resource, owner, ttlMs, 'acquireMany'),
      ),
    renewMany: (leases, ttlMs) =>
      runInOrder(
        leases,
        (lease) => lease.resource,
        concurrency,
        (lease) => records.renew(lease, ttlMs),
      ),
    releaseMany: (leases) =>
      runInOrder(
        leases,
        (lease) => lease.resource,
        concurrency,
        (lease) => records.release(lease),
      ),
    list,
  };
}
