import type { LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import { compareResources, prefixEnd, type AcquireOutcome } from '../../core/store.js';
import type { Clock } from '../../core/time.js';
import type { SqliteDatabase, SqliteStatement, Transaction } from './sqlite-driver.js';
import { isNotNull } from './sqlite-errors.js';
import type { statements } from './sqlite-ops.js';
import {
  granted,
  refusedRecord,
  toRecord,
  type GrantRow,
  type RecordRow,
} from './sqlite-record.js';
import { takeAll, takeFirst, type GroupSteps } from './sqlite-take.js';

/** Every statement of `text` prepared once, under the same keys. */
export function prepareAll<T extends Record<string, string>>(
  db: SqliteDatabase,
  text: T,
): { [K in keyof T]: SqliteStatement } {
  return Object.fromEntries(Object.entries(text).map(([k, v]) => [k, db.prepare(v)])) as {
    [K in keyof T]: SqliteStatement;
  };
}

/** The store's prepared statements, under the keys of `statements()`. */
export type SqliteStatements = { [K in keyof ReturnType<typeof statements>]: SqliteStatement };

/**
 * What every call runs on the connection, synchronously: the single-lease statements and the
 * transactions of the batches, the group and the first-free acquisition. The store runs each
 * through its runner (in turn, waiting out locks) or its transition group.
 */
export class SqliteTransitions {
  readonly acquireBatch: Transaction<
    (resources: readonly string[], owner: string, ttlMs: number) => AcquireOutcome[]
  >;
  readonly groupTransaction: Transaction<
    (resources: readonly string[], owner: string, ttlMs: number) => Lease[] | null
  >;
  readonly firstTransaction: Transaction<
    (resources: readonly string[], owner: string, ttlMs: number) => Lease | null
  >;
  readonly renewBatch: Transaction<
    (leases: readonly Lease[], ttlMs: number | undefined) => (Lease | null)[]
  >;
  readonly releaseBatch: Transaction<(leases: readonly LeaseRef[]) => boolean[]>;
  readonly renewData: Transaction<
    (lease: Lease, ttlMs: number | undefined, data: LeaseData | null) => Lease | null
  >;
  readonly releaseData: Transaction<(lease: LeaseRef, data: LeaseData | null) => boolean>;

  constructor(
    db: SqliteDatabase,
    private readonly sql: SqliteStatements,
    private readonly clock: Clock,
    private readonly maxClockSkewMs: number,
  ) {
    this.acquireBatch = db.transaction(
      (resources: readonly string[], owner: string, ttlMs: number) => {
        const now = this.clock.now();
        return resources.map((resource) => this.acquireOne(resource, owner, ttlMs, now));
      },
    );
    const steps: GroupSteps = {
      take: (resource, owner, ttlMs, now) => this.take(resource, owner, ttlMs, now),
      held: (resource, now) => {
        const row = this.sql.held.get(resource, this.maxClockSkewMs, now) as
          { valid: number } | undefined;
        if (row && !row.valid) throw this.refused(resource);
        return row !== undefined;
      },
    };
    this.groupTransaction = db.transaction(
      (resources: readonly string[], owner: string, ttlMs: number) =>
        takeAll(steps, resources, owner, ttlMs, this.clock.now()),
    );
    this.firstTransaction = db.transaction(
      (resources: readonly string[], owner: string, ttlMs: number) =>
        takeFirst(steps, resources, owner, ttlMs, this.clock.now()),
    );
    this.renewBatch = db.transaction((leases: readonly Lease[], ttlMs: number | undefined) => {
      const now = this.clock.now();
      return leases.map((lease) => this.renew(lease, ttlMs, now));
    });
    this.releaseBatch = db.transaction((leases: readonly LeaseRef[]) =>
      leases.map((lease) => this.release(lease)),
    );
    this.renewData = db.transaction(
      (lease: Lease, ttlMs: number | undefined, data: LeaseData | null) => {
        const renewed = this.renew(lease, ttlMs, this.clock.now());
        if (!renewed) return null;
        this.sql.setData.run(lease.resource, data);
        return withData(renewed, data);
      },
    );
    this.releaseData = db.transaction((lease: LeaseRef, data: LeaseData | null) => {
      if (!this.release(lease)) return false;
      this.sql.setData.run(lease.resource, data);
      return true;
    });
  }

  /**
   * A single acquire's compare-and-set, on the clock as the statement runs. Read with `all`, which
   * steps the statement to its end: run alone (autocommit), the statement commits there, and a
   * failed commit throws. (`get` stops at the first row and leaves the commit to a reset whose
   * error better-sqlite3 does not report: a grant could be answered that never committed.)
   */
  grant(resource: string, owner: string, ttlMs: number): Lease | null {
    const now = this.clock.now();
    let row: GrantRow | undefined;
    try {
      [row] = this.sql.acquire.all(
        resource,
        owner,
        now,
        ttlMs,
        this.maxClockSkewMs,
        now,
      ) as GrantRow[];
    } catch (error) {
      throw isNotNull(error) ? this.refused(resource) : error;
    }
    return row ? granted(resource, owner, ttlMs, row) : null;
  }

  /** The renewal's compare-and-set at `now` (by default, on the clock as it runs). */
  renew(lease: Lease, ttlMs: number | undefined, now = this.clock.now()): Lease | null {
    const ttl = ttlMs ?? lease.ttlMs;
    const { resource, owner, token } = lease;
    // `all`, not `get`: see `grant`.
    const [row] = this.sql.renew.all(now, ttl, resource, owner, token) as { expiresAt: number }[];
    return row ? { resource, owner, token, expiresAt: row.expiresAt, ttlMs: ttl } : null;
  }

  /** The release's compare-and-set. */
  release(lease: LeaseRef): boolean {
    return this.sql.release.run(lease.resource, lease.owner, lease.token).changes > 0;
  }

  /** The compare-and-set on owner and token that writes the data only when it holds. */
  writeData(lease: LeaseRef, data: LeaseData | null): boolean {
    const { resource, owner, token } = lease;
    return this.sql.writeData.run(data, resource, owner, token).changes > 0;
  }

  get(resource: string): LeaseRecord | null {
    const row = this.sql.get.get(resource) as RecordRow | undefined;
    return row ? toRecord(row) : null;
  }

  /**
   * One index range of `list`: from the prefix, or just past `from` when that is further on, at
   * most `limit` records.
   */
  listPage(prefix: string, from: string, limit: number): LeaseRecord[] {
    const to = prefixEnd(prefix);
    const rows =
      from !== '' && compareResources(from, prefix) >= 0
        ? to === undefined
          ? this.sql.listAfter.all({ after: from, limit })
          : this.sql.listAfterRange.all({ after: from, to, limit })
        : to === undefined
          ? this.sql.listFrom.all({ from: prefix, limit })
          : this.sql.listRange.all({ from: prefix, to, limit });
    return (rows as RecordRow[]).map(toRecord);
  }

  /** The single acquire's statement inside a transaction, on the transaction's reading of the clock. */
  private take(resource: string, owner: string, ttlMs: number, now: number): Lease | null {
    let row: GrantRow | undefined;
    try {
      row = this.sql.acquire.get(resource, owner, now, ttlMs, this.maxClockSkewMs, now) as
        GrantRow | undefined;
    } catch (error) {
      throw isNotNull(error) ? this.refused(resource) : error;
    }
    return row ? granted(resource, owner, ttlMs, row) : null;
  }

  /**
   * `RECORD_INVALID` for a record the acquire statement refused to take (it failed its NOT NULL
   * constraint, writing nothing: a failed statement is undone alone, so a transaction around it
   * goes on), saying what is wrong with it as it reads now: a read only on this path.
   */
  private refused(resource: string): LeaseError {
    return refusedRecord(resource, this.sql.get.get(resource) as RecordRow | undefined);
  }

  /** One resource of `acquireMany`; the holder is read in the same transaction when refused. */
  private acquireOne(resource: string, owner: string, ttlMs: number, now: number): AcquireOutcome {
    const lease = this.take(resource, owner, ttlMs, now);
    if (lease) return { resource, lease };
    const row = this.sql.get.get(resource) as RecordRow | undefined;
    return row ? { resource, lease: null, holder: toRecord(row) } : { resource, lease: null };
  }
}
