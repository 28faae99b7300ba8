import type { LeaseBatches, LeaseTransitions } from '../../core/delegating-store.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import type { LeaseData } from '../../core/lease-data.js';
import { dataSize, ReplySizer } from '../../core/reply-sizer.js';
import type { AcquireOutcome } from '../../core/store.js';
import { acquireInChunks } from './sqlite-batch.js';
import type { TransitionGroup } from './sqlite-group.js';
import { readSizedPages } from './sqlite-list.js';
import { RENEW_ROWS, type SqliteRunner } from './sqlite-runner.js';
import type { SqliteTransitions } from './sqlite-transitions.js';
import type { ReleaseWatch } from './sqlite-watch.js';

/** Most candidates an acquireFirst may have to go with the grouped single-lease transitions. */
const GROUPED_CANDIDATES_MAX = 16;

/**
 * The store's calls, each run through the `SqliteRunner` in steps that hold the event loop a few
 * milliseconds at most: single-lease transitions asked together share one transaction (see
 * `TransitionGroup`), batches go in chunks, and a release wakes the store's own release watch.
 */
export class SqliteCalls implements LeaseTransitions, LeaseBatches {
  /** How many records one acquireMany step takes, by the data records carried lately. */
  private readonly sizer = new ReplySizer();

  constructor(
    private readonly runner: SqliteRunner,
    /** The statements and transactions, each one synchronous step. */
    private readonly records: SqliteTransitions,
    /** The single-lease transitions asked for together, one transaction for them all. */
    private readonly group: TransitionGroup,
    private readonly releases: ReleaseWatch,
  ) {}

  /**
   * Single-lease transitions asked for together (many callers at once) share one transaction and
   * one commit; each is still its own statement, applied in the order asked (see
   * `TransitionGroup`).
   */
  async tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    return this.group.add('tryAcquire', () => this.records.grant(resource, owner, ttlMs));
  }

  /**
   * One IMMEDIATE transaction per chunk of `BATCH_ROWS` resources, each on one reading of the
   * clock; the event loop runs between chunks (see `acquireInChunks`). Each resource is its own
   * compare-and-set, as the contract says, so chunking changes no outcome.
   */
  async acquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return acquireInChunks(this.runner, this.records, this.sizer, resources, owner, ttlMs);
  }

  /**
   * One IMMEDIATE transaction, one synchronous step (see `takeAll`): every member probed on one
   * reading of the clock (expired only past `expiresAt + maxClockSkewMs`, as `tryAcquire`
   * decides), then all taken with the single acquire's statement, or none when one is live. At
   * `LIMITS.groupMaxSize` members the step is a fifth of the `BATCH_ROWS` chunk that bounds
   * `acquireMany`'s hold on the event loop.
   */
  async acquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    return this.runner.run('acquireAll', () =>
      this.records.groupTransaction.immediate(resources, owner, ttlMs),
    );
  }

  /**
   * One IMMEDIATE transaction, one synchronous step (see `takeFirst`): the single acquire's
   * statement on each candidate in order, on one reading of the clock, until one is granted.
   * Measured on a loaded 2-core machine, 1,000 refusals (the most candidates allowed,
   * `LIMITS.permitsMax`) took 2.6–5 ms, about what a `BATCH_ROWS` chunk of grants takes.
   */
  async acquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const take = (): Lease | null =>
      this.records.firstTransaction.immediate(resources, owner, ttlMs);
    // A few candidates (a counting lease's permits): with the single-lease transitions asked
    // meanwhile, one commit for all (nested in the group's transaction, it is a savepoint).
    if (resources.length <= GROUPED_CANDIDATES_MAX) return this.group.add('acquireFirst', take);
    return this.runner.run('acquireFirst', take);
  }

  async renew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    return this.group.add('renew', () => this.records.renew(lease, ttlMs));
  }

  async release(lease: LeaseRef): Promise<boolean> {
    const released = await this.group.add('release', () => this.records.release(lease));
    if (released) this.releases.poke();
    return released;
  }

  /** One transaction per chunk of `RENEW_ROWS` leases: one lock, one commit each. */
  async renewMany(leases: readonly Lease[], ttlMs: number | undefined): Promise<(Lease | null)[]> {
    return this.runner.runChunked(
      'renewMany',
      leases,
      (chunk) => this.records.renewBatch.immediate(chunk, ttlMs),
      RENEW_ROWS,
    );
  }

  /** One transaction per chunk of `RENEW_ROWS` leases. */
  async releaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    const results = await this.runner.runChunked(
      'releaseMany',
      leases,
      (chunk) => this.records.releaseBatch.immediate(chunk),
      RENEW_ROWS,
    );
    if (results.includes(true)) this.releases.poke();
    return results;
  }

  /**
   * One statement: the compare-and-set on owner and token that writes the data only when it
   * holds (see `statements().writeData`), grouped with calls asked for at the same time as the
   * other single-lease transitions are.
   */
  async writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    this.sizer.observe(dataSize(data), 1);
    return this.group.add('writeData', () => this.records.writeData(lease, data));
  }

  /**
   * `renew` and `release` carrying data: one transaction (one lock, one commit, as the plain
   * transition's statement alone), in which the plain transition's own statement is the
   * compare-and-set and the data is written only when it changed the record. Grouped with
   * other calls, the transaction is a savepoint in the group's.
   */
  async renewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    this.sizer.observe(dataSize(data), 1);
    return this.group.add('renew', () => this.records.renewData.immediate(lease, ttlMs, data));
  }

  async releaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    this.sizer.observe(dataSize(data), 1);
    const released = await this.group.add('release', () =>
      this.records.releaseData.immediate(lease, data),
    );
    if (released) this.releases.poke();
    return released;
  }

  async get(resource: string): Promise<LeaseRecord | null> {
    return this.runner.run('get', () => this.records.get(resource));
  }

  /**
   * One index range per read: from the prefix, or just past `after` when that is further on. A long
   * list is read in pages (see `readSizedPages`), each its own step.
   */
  async list(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    return readSizedPages(limit, after, (from, n) =>
      this.runner.run('list', () => this.records.listPage(prefix, from, n)),
    );
  }
}
