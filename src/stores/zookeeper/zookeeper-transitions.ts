import type { LeaseBatches, LeaseTransitions } from '../../core/delegating-store.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import type { LeaseData } from '../../core/lease-data.js';
import { LIMITS } from '../../core/options.js';
import type { AcquireOutcome } from '../../core/store.js';
import type { ZkAcquirer } from './zookeeper-acquire.js';
import type { ZkGroups } from './zookeeper-group.js';
import { listRecords, readLease } from './zookeeper-list.js';
import type { ZkPaths } from './zookeeper-paths.js';
import type { ZkSession } from './zookeeper-session.js';
import type { ZkSessions } from './zookeeper-sessions.js';
import { rounds, type Item, type ZkUpdates } from './zookeeper-update.js';

/**
 * Every call of the store on its records, of one lease or of a batch, each on the session it
 * belongs on: an acquisition or a renewal on the session for the TTL asked for, a release or a
 * data write where the lease was granted when the caller passes the whole lease, a read on the
 * main session. Acquisitions go through `ZkAcquirer` and `ZkGroups`; renewals, releases and data
 * writes through `ZkUpdates`, a batch one `multi` per round per session.
 */
export class ZookeeperTransitions implements LeaseTransitions, LeaseBatches {
  constructor(
    private readonly sessions: ZkSessions,
    private readonly paths: ZkPaths,
    private readonly updates: ZkUpdates,
    private readonly acquirer: ZkAcquirer,
    private readonly groups: ZkGroups,
  ) {}

  /** On the session for the TTL, one `multi` when the resource is free (see `ZkAcquirer.one`). */
  async tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    const session = await this.sessions.forTtl(ttlMs);
    return (await this.acquirer.one(session, this.paths.of(resource), owner, ttlMs)).lease;
  }

  /** On the session for the TTL, reads then `multi`s of up to 256 KB (see `ZkAcquirer.many`). */
  async acquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    const session = await this.sessions.forTtl(ttlMs);
    const paths = resources.map((r) => this.paths.of(r));
    return this.acquirer.many(session, paths, owner, ttlMs);
  }

  /** The first candidate's `multi`, then one look at all and a `multi` per free one (`ZkGroups.first`). */
  async acquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const session = await this.sessions.forTtl(ttlMs);
    return this.groups.first(
      session,
      resources.map((r) => this.paths.of(r)),
      owner,
      ttlMs,
    );
  }

  /** The record and token znodes, read together (and the data znode when there is one). */
  async get(resource: string): Promise<LeaseRecord | null> {
    return readLease(await this.sessions.main(), this.paths, resource);
  }

  /** Every name in the namespace, filtered and sorted here, then the page's records (`listRecords`). */
  async list(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    return listRecords(await this.sessions.main(), this.paths, prefix, limit, after);
  }

  /**
   * On the session for the TTL asked for: one `multi` per round that writes each record again
   * (moving the hold onto this session when the session that holds it is not one of the store's
   * with a timeout long enough for the new TTL), after reads only for leases this store did not
   * write last (see `ZkUpdates`).
   */
  async renewMany(leases: readonly Lease[], ttlMs: number | undefined): Promise<(Lease | null)[]> {
    const ttlOf = (lease: Lease): number => ttlMs ?? lease.ttlMs;
    const out = new Array<Lease | null>(leases.length).fill(null);
    const groups = await this.group(leases, (lease) => this.sessions.forTtl(ttlOf(lease)));
    await Promise.all(
      [...groups].map(async ([session, items]) => {
        for (const round of rounds(items)) await this.updates.renew(session, round, ttlOf, out);
      }),
    );
    return out;
  }

  /** Like renewal: one `multi` per round that deletes each hold and blanks its record. */
  async releaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    const out = new Array<boolean>(leases.length).fill(false);
    const groups = await this.group(leases, (lease) => this.releaseSession(lease));
    await Promise.all(
      [...groups].map(async ([session, items]) => {
        for (const round of rounds(items)) await this.updates.release(session, round, out);
      }),
    );
    return out;
  }

  /** One lease: `renewMany`'s work without the grouping; `data` is written in the same `multi`. */
  async renew(
    lease: Lease,
    ttlMs: number | undefined,
    data?: LeaseData | null,
  ): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const session = await this.sessions.forTtl(ttl);
    const out: (Lease | null)[] = [null];
    await this.updates.renew(session, [this.item(lease, data)], () => ttl, out);
    return out[0]!;
  }

  /** One lease: `releaseMany`'s work without the grouping; `data` is written in the same `multi`. */
  async release(lease: LeaseRef, data?: LeaseData | null): Promise<boolean> {
    const session = await this.releaseSession(lease);
    const out = [false];
    await this.updates.release(session, [this.item(lease, data)], out);
    return out[0]!;
  }

  /** A renewal whose `multi` also writes the data znode: still one `multi`. */
  renewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    return this.renew(lease, ttlMs, data);
  }

  /** A release whose `multi` also writes the data znode: still one `multi`. */
  releaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.release(lease, data);
  }

  /**
   * One `multi` with renew's conditions as checks (the hold exists, the record is at the version
   * this store's last write of the grant left, else read first as renew does) that creates,
   * writes or deletes the data znode alone: the record, its `mtime` and so the expiry stay.
   */
  async writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const session = await this.releaseSession(lease);
    const out = [false];
    await this.updates.writeData(session, [this.item(lease, data)], out);
    return out[0]!;
  }

  private item<T extends LeaseRef>(lease: T, data: LeaseData | null | undefined): Item<T> {
    const paths = this.paths.of(lease.resource);
    return data === undefined ? { index: 0, lease, paths } : { index: 0, lease, paths, data };
  }

  /** Release reads where the lease was granted when the caller passes the whole lease. */
  private releaseSession(lease: LeaseRef): Promise<ZkSession> {
    const ttl = (lease as Partial<Lease>).ttlMs;
    const valid =
      typeof ttl === 'number' &&
      Number.isInteger(ttl) &&
      ttl >= LIMITS.ttlMinMs &&
      ttl <= LIMITS.ttlMaxMs;
    return valid
      ? this.sessions.forTtl(ttl).catch(() => this.sessions.main())
      : this.sessions.main();
  }

  private async group<T extends LeaseRef>(
    leases: readonly T[],
    sessionOf: (lease: T) => Promise<ZkSession>,
  ): Promise<Map<ZkSession, Item<T>[]>> {
    const sessions = await Promise.all(leases.map(sessionOf));
    const groups = new Map<ZkSession, Item<T>[]>();
    leases.forEach((lease, index) => {
      const item = { index, lease, paths: this.paths.of(lease.resource) };
      const group = groups.get(sessions[index]!);
      if (group) group.push(item);
      else groups.set(sessions[index]!, [item]);
    });
    return groups;
  }
}
