import type { Diagnosis } from './diagnosis.js';
import { ErrorCode, invalidArgument, LeaseError } from './errors.js';
import type { Lease, LeaseRecord, LeaseRef } from './lease.js';
import { checkData, type LeaseData } from './lease-data.js';
import {
  checkLease,
  checkLeaseRef,
  checkInTurns,
  checkListOptions,
  checkOwner,
  checkResource,
  checkGroup,
  checkResources,
  checkTtl,
  invalidCandidates,
  type ListOptions,
} from './options.js';
import { renewCopies } from './renew-copies.js';
import { runInChunks } from './run-in-order.js';
import { acquireFirstByList, acquireInOrder, type SingleOps } from './store-defaults.js';

/** The candidates of `acquireFirst`: a non-empty list of names, no duplicates, at most `LIMITS.permitsMax`. */
function checkCandidates(resources: unknown): readonly string[] {
  const checked = checkResources(resources);
  invalidCandidates(checked.length);
  return checked;
}

/** What a store can do, as data: callers and tests branch on this, never on a store's name. */
export interface StoreCapabilities {
  /** `'store'`: expiry is decided on the store's own clock inside the compare-and-set. `'local'`: on the caller's clock. */
  readonly clock: 'store' | 'local';
  /** `renewMany` / `releaseMany` are one store call for any number of leases. */
  readonly batch: boolean;
  /** The store can notify `watch` listeners when a lease is released or expires. */
  readonly watch: boolean;
  /**
   * `acquireAll` of up to this many resources is one atomic store call (a transaction, a script,
   * a `multi`); a larger group, and every group when `0`, is taken one member at a time in resource
   * order and given back at the first refusal. Either way a caller gets every member or none.
   */
  readonly atomicGroupMax: number;
  /**
   * Records carry lease data (`LeaseRecord.data`): `writeData`, and `renew` / `release` with data,
   * are one compare-and-set on owner and token, and every grant, `get` and `list` returns the
   * value. Absent or `false`: those calls fail with `NOT_SUPPORTED` and records have no `data`.
   */
  readonly data?: boolean;
  /**
   * Calls made through this store object take effect in the order they are made (one connection
   * per record, commands applied in order): an acquisition asked right after a release of the
   * same record is applied after it. The client then wakes a local waiter as a release is sent,
   * rather than when its notice arrives. A hint for waiting only; the compare-and-set decides.
   */
  readonly ordered?: boolean;
}

/** What a `watch` listener is told about one resource. */
export interface WatchEvent {
  /**
   * What happened: `'released'` on a graceful release, `'expired'` when a lapsed lease was
   * removed, `'acquired'` on a new grant. Which kinds arrive depends on the store (most report
   * only `'released'`).
   */
  readonly type: 'acquired' | 'released' | 'expired';
  /** The resource the event is about. */
  readonly resource: string;
}

/** The unsubscribe function `watch` returns; `ready` settles once the watch is in place. */
export type Unwatch = (() => void) & {
  /**
   * Resolves once the store's watch covers the prefix; rejects (a `STORE_UNAVAILABLE` LeaseError)
   * if that failed or took too long. The watch itself keeps trying either way.
   */
  readonly ready: Promise<void>;
};

/** Called by `watch` with each event for a resource under the watched prefix. */
export type WatchListener = (event: WatchEvent) => void;

/** One resource's answer to `acquireMany`. */
export interface AcquireOutcome {
  /** The resource this outcome is for. */
  readonly resource: string;
  /** The lease granted, or `null` when a live lease stood in the way. */
  readonly lease: Lease | null;
  /**
   * When `lease` is `null`: the live record that stood in the way, if the store could tell in the
   * same round trip (every built-in store does; DynamoDB only where the endpoint returns the failed item, which dynalite does not).
   */
  readonly holder?: LeaseRecord;
}

/**
 * The contract every store implements. Each method is one atomic compare-and-set on the store,
 * one round trip where the store allows. "Someone else holds it" is a result (`null` / `false`);
 * exceptions are for bad input (`INVALID_ARGUMENT`) and infrastructure (`STORE_UNAVAILABLE`).
 */
export interface LeaseStore {
  /** What this store can do (batch calls, `watch`, whose clock decides expiry). */
  readonly capabilities: StoreCapabilities;
  /**
   * The clock disagreement a contender allows before it treats a record as expired
   * (design rule 1); a holder subtracts it from its own deadline too (rule 2).
   */
  readonly maxClockSkewMs: number;
  /**
   * How long after `expiresAt` the store may still count a lapsed lease as held (etcd revokes a
   * lapsed lease a little late); contenders add it before trying to take over. Absent means 0.
   */
  readonly expiryLagMs?: number;
  /** Acquires when there is no record, or it was released, or it expired; `null` while a live lease exists. */
  tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null>;
  /**
   * `tryAcquire` for many resources (no duplicates, at most `LIMITS.batchMaxSize`), one outcome per
   * resource in input order; one round trip where the store allows. Each resource is its own
   * compare-and-set: some may be granted while others are not.
   */
  acquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]>;
  /**
   * Takes every resource of `resources` (no duplicates, at most `LIMITS.groupMaxSize`) or none: the
   * leases in input order, or `null` when a live lease stood in the way of any of them. One atomic
   * call up to `capabilities.atomicGroupMax` members; beyond it, members are taken in resource
   * order and given back at the first refusal, so nothing of a refused group stays held.
   */
  acquireAll(resources: readonly string[], owner: string, ttlMs: number): Promise<Lease[] | null>;
  /**
   * Takes one free resource among `resources` (no duplicates, at most `LIMITS.permitsMax`),
   * preferring earlier ones: the lease, or `null` when each one is held. One round trip where the
   * store can choose a free record inside one call; counting leases are built on it.
   */
  acquireFirst(resources: readonly string[], owner: string, ttlMs: number): Promise<Lease | null>;
  /**
   * Extends a lease still ours (same owner and token); `null` when it is not. With `data` (stores
   * with `capabilities.data`), writes it in the same compare-and-set; without, the record's data
   * is left as it is.
   */
  renew(lease: Lease, ttlMs?: number, data?: LeaseData | null): Promise<Lease | null>;
  /**
   * Gives a lease up (owner and token must match); `false` when it was no longer ours. With
   * `data`, writes it in the same compare-and-set, for the next holder.
   */
  release(lease: LeaseRef, data?: LeaseData | null): Promise<boolean>;
  /**
   * Writes the record's lease data (`null` clears it) if the lease is still ours (same owner and
   * token, as `renew` compares): `true` when written, `false` when the record is no longer this
   * grant's (taken over or released). Expiry and TTL are unchanged. `NOT_SUPPORTED` on a store
   * without `capabilities.data`.
   */
  writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean>;
  /** `renew` for many leases, results in input order. */
  renewMany(leases: readonly Lease[], ttlMs?: number): Promise<(Lease | null)[]>;
  /** `release` for many leases, results in input order. */
  releaseMany(leases: readonly LeaseRef[]): Promise<boolean[]>;
  /** The record the store holds for `resource`, live or not; `null` when it holds none. */
  get(resource: string): Promise<LeaseRecord | null>;
  /** Records in resource order; `prefix` is matched literally; `after` starts past a resource (paging). */
  list(options?: ListOptions): Promise<LeaseRecord[]>;
  /** Calls `listener` when a lease under `prefix` is released or expires; returns the unsubscribe function. */
  watch?(prefix: string, listener: WatchListener): Unwatch;
  /**
   * Reads the settings that decide whether acknowledged compare-and-sets survive restarts, crashes,
   * power losses and failovers (what `leasehold doctor` and `diagnoseStore` report). Read-only.
   * Every built-in store has it; a custom store may leave it out.
   */
  diagnose?(): Promise<Diagnosis>;
  /** Closes the store's connections; later calls fail with `STORE_UNAVAILABLE`. Closing twice is harmless. */
  close(): Promise<void>;
}

/**
 * Input checks, closed-state checks and error mapping, written once for every adapter.
 * An adapter implements the `do…` operations and `mapError`, nothing else.
 */
export abstract class StoreBase implements LeaseStore {
  abstract readonly capabilities: StoreCapabilities;
  abstract readonly maxClockSkewMs: number;
  private closed = false;
  /**
   * Leases (or names) per piece of a batch: a longer `acquireMany`, `renewMany` or `releaseMany`
   * reaches the adapter as consecutive pieces of at most this many, one after another, so that
   * encoding one piece's request and decoding its answer each hold the event loop briefly (design
   * rule 6), and a lease listed twice across pieces is answered as calls made one by one would
   * be. An adapter whose driver encodes or decodes a whole request in one synchronous step sets
   * it from a measurement. @default Infinity (the adapter sees the whole batch)
   */
  protected readonly batchPiece: number = Infinity;

  /** `tryAcquire` once its input is checked: the new lease, or `null` while a live lease exists. */
  protected abstract doTryAcquire(
    resource: string,
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null>;
  /** `renewMany` once its input is checked, in pieces of `batchPiece`: results in input order. */
  protected abstract doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]>;
  /** `releaseMany` once its input is checked, in pieces of `batchPiece`: results in input order. */
  protected abstract doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]>;
  /** `get` once its input is checked: the record, live or not; `null` when the store holds none. */
  protected abstract doGet(resource: string): Promise<LeaseRecord | null>;
  /** Up to `limit` records in resource order under `prefix` (literal), starting past `after`. */
  protected abstract doList(prefix: string, limit: number, after: string): Promise<LeaseRecord[]>;
  /** Closes the store's connections, for `close()`. */
  protected abstract doClose(): Promise<void>;

  /**
   * The batch form of acquire. The default makes one `doTryAcquire` per resource, a few at a time;
   * adapters that can do the batch in one round trip override it.
   */
  protected async doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    const outcomes: AcquireOutcome[] = new Array(resources.length);
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < resources.length) {
        const i = next++;
        const resource = resources[i]!;
        outcomes[i] = { resource, lease: await this.doTryAcquire(resource, owner, ttlMs) };
      }
    };
    await Promise.all(Array.from({ length: Math.min(8, resources.length) }, lane));
    return outcomes;
  }

  /**
   * The atomic form of `acquireAll`, called for groups of up to `capabilities.atomicGroupMax`
   * members: every lease in input order, or `null` with nothing written. Adapters that declare
   * `atomicGroupMax > 0` override it.
   */
  protected doAcquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    return acquireInOrder(this.singleOps(), resources, owner, ttlMs, compareResources);
  }

  /**
   * The form of `acquireFirst` an adapter overrides when it can pick a free record in one call.
   * The default tries the first candidate, then reads the rest with one `list` page and tries
   * those that look free.
   */
  protected doAcquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    return acquireFirstByList(this.singleOps(), resources, owner, ttlMs);
  }

  /**
   * The store's time as the caller can estimate it, for telling which records look free in the
   * default `acquireFirst` (advice only: the grant is still the store's compare-and-set). Stores
   * with an injected clock override it. @default Date.now()
   */
  protected nowEstimate(): number {
    return Date.now();
  }

  private singleOps(): SingleOps {
    return {
      tryAcquire: (resource, owner, ttlMs) => this.doTryAcquire(resource, owner, ttlMs),
      releaseMany: (leases) =>
        runInChunks(leases, this.batchPiece, (piece) => this.doReleaseMany(piece)),
      list: (prefix, limit, after) => this.doList(prefix, limit, after),
      now: () => this.nowEstimate(),
      allowanceMs: this.maxClockSkewMs + (this.expiryLagMs ?? 0),
    };
  }

  /** How long after `expiresAt` the store may still count a lapsed lease (see `LeaseStore`). */
  declare readonly expiryLagMs?: number;

  /** Single-lease forms default to the batch forms; adapters override when one is cheaper. */
  protected async doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    const [result] = await this.doRenewMany([lease], ttlMs);
    return result ?? null;
  }

  /** One release; the default is a `doReleaseMany` of one. */
  protected async doRelease(lease: LeaseRef): Promise<boolean> {
    const [result] = await this.doReleaseMany([lease]);
    return result ?? false;
  }

  /** Turns a driver error into a `LeaseError`. The default calls everything `STORE_UNAVAILABLE`. */
  protected mapError(error: unknown, operation: string): LeaseError {
    if (error instanceof LeaseError) return error;
    const detail = error instanceof Error ? error.message : String(error);
    return new LeaseError(ErrorCode.STORE_UNAVAILABLE, `${operation} failed: ${detail}`, {
      cause: error,
    });
  }

  tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    return this.guarded('tryAcquire', () => {
      checkResource(resource);
      checkOwner(owner);
      checkTtl(ttlMs);
      return this.doTryAcquire(resource, owner, ttlMs);
    });
  }

  acquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return this.guarded('acquireMany', async () => {
      checkResources(resources);
      checkOwner(owner);
      checkTtl(ttlMs);
      if (resources.length === 0) return [];
      return runInChunks(resources, this.batchPiece, (piece) =>
        this.doAcquireMany(piece, owner, ttlMs),
      );
    });
  }

  acquireAll(resources: readonly string[], owner: string, ttlMs: number): Promise<Lease[] | null> {
    return this.guarded('acquireAll', () => {
      checkGroup(resources);
      checkOwner(owner);
      checkTtl(ttlMs);
      const copy = [...resources];
      return copy.length <= this.capabilities.atomicGroupMax
        ? this.doAcquireAll(copy, owner, ttlMs)
        : acquireInOrder(this.singleOps(), copy, owner, ttlMs, compareResources);
    });
  }

  acquireFirst(resources: readonly string[], owner: string, ttlMs: number): Promise<Lease | null> {
    return this.guarded('acquireFirst', () => {
      checkCandidates(resources);
      checkOwner(owner);
      checkTtl(ttlMs);
      return this.doAcquireFirst([...resources], owner, ttlMs);
    });
  }

  renew(lease: Lease, ttlMs?: number, data?: LeaseData | null): Promise<Lease | null> {
    return this.guarded('renew', () => {
      checkLease(lease);
      if (ttlMs !== undefined) checkTtl(ttlMs);
      if (data === undefined) return this.doRenew(lease, ttlMs);
      return this.doRenewWithData(lease, ttlMs, this.checkedData(data));
    });
  }

  release(lease: LeaseRef, data?: LeaseData | null): Promise<boolean> {
    return this.guarded('release', () => {
      const ref = checkLeaseRef(lease);
      if (data === undefined) return this.doRelease(ref);
      return this.doReleaseWithData(ref, this.checkedData(data));
    });
  }

  writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.guarded('writeData', () => {
      const ref = checkLeaseRef(lease);
      return this.doWriteData(ref, this.checkedData(data));
    });
  }

  /** The value checked (type and `LIMITS.dataMaxBytes`), on a store that keeps lease data. */
  private checkedData(data: unknown): LeaseData | null {
    const checked = checkData(data);
    if (!this.capabilities.data)
      throw new LeaseError(
        ErrorCode.NOT_SUPPORTED,
        'this store does not keep lease data (capabilities.data is false); nothing was written',
        { retryable: false },
      );
    return checked;
  }

  /**
   * `writeData`: one compare-and-set on owner and token that sets the record's data, leaving
   * owner, token and expiry as they are. Adapters with `capabilities.data` override it.
   */
  protected doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    void lease;
    void data;
    return Promise.reject(notSupported('writeData'));
  }

  /** `renew` that also sets the record's data, in the same compare-and-set. */
  protected doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    void lease;
    void ttlMs;
    void data;
    return Promise.reject(notSupported('renew with data'));
  }

  /** `release` that also sets the record's data, in the same compare-and-set. */
  protected doReleaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    void lease;
    void data;
    return Promise.reject(notSupported('release with data'));
  }

  renewMany(leases: readonly Lease[], ttlMs?: number): Promise<(Lease | null)[]> {
    return this.guarded('renewMany', async () => {
      const checked = await checkInTurns(leases, checkLease);
      if (ttlMs !== undefined) checkTtl(ttlMs);
      if (checked.length === 0) return [];
      const copies = renewCopies(checked, ttlMs);
      return copies.answer(
        await runInChunks(copies.unique, this.batchPiece, (piece) =>
          this.doRenewMany(piece, ttlMs),
        ),
      );
    });
  }

  releaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return this.guarded('releaseMany', async () => {
      const checked = await checkInTurns(leases, checkLeaseRef);
      if (checked.length === 0) return [];
      return runInChunks(checked, this.batchPiece, (piece) => this.doReleaseMany(piece));
    });
  }

  get(resource: string): Promise<LeaseRecord | null> {
    return this.guarded('get', () => this.doGet(checkResource(resource)));
  }

  list(options?: ListOptions): Promise<LeaseRecord[]> {
    return this.guarded('list', () => {
      const { prefix, limit, after } = checkListOptions(options);
      return this.doList(prefix, limit, after);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.doClose();
    } catch (error) {
      throw this.mapError(error, 'close');
    }
  }

  /** Whether `close()` has been called. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** `await using store = …` closes the store at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** The checks every `watch` starts with: the store is open, the prefix valid, the listener a function. */
  protected checkWatch(prefix: unknown, listener: unknown): string {
    if (this.closed) throw closedError('watch');
    const checked = checkListOptions({ prefix }).prefix;
    if (typeof listener !== 'function') throw invalidArgument('listener', 'must be a function');
    return checked;
  }

  /**
   * Runs one operation of the store: refused once the store is closed, and whatever `fn` throws
   * goes through `mapError`. Every method of the contract runs through it; an adapter's own
   * methods (`init`, `createTable`) use it too.
   */
  protected async guarded<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    if (this.closed) throw closedError(operation);
    try {
      return await fn();
    } catch (error) {
      throw this.mapError(error, operation);
    }
  }
}

function closedError(operation: string): LeaseError {
  return new LeaseError(ErrorCode.STORE_UNAVAILABLE, `${operation} failed: the store is closed`, {
    retryable: false,
  });
}

/**
 * The smallest string greater than every string that starts with `prefix`, in code-point
 * (= UTF-8 byte) order; `undefined` when there is none. Lets a store scan `[prefix, end)` on an index.
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = Array.from(prefix);
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      const next = last === 0xd7ff ? 0xe000 : last + 1;
      return points.join('') + String.fromCodePoint(next);
    }
  }
  return undefined;
}

/** Resource order shared by every store: code-point order, which is UTF-8 byte order. */
export function compareResources(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}

function notSupported(what: string): LeaseError {
  return new LeaseError(ErrorCode.NOT_SUPPORTED, `${what}: this store does not keep lease data`, {
    retryable: false,
  });
}
