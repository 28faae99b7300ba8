import type { LeaseTransitions } from '../../core/delegating-store.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import { Coalescer } from './etcd-coalesce.js';
import type { EtcdContext } from './etcd-context.js';
import type { EtcdTxnRequest } from './etcd-driver.js';
import { acquireChain, firstPerTxn, pickFirst } from './etcd-first.js';
import { acquireGroup } from './etcd-group.js';
import { byKind, listRecords } from './etcd-list.js';
import {
  acquiredData,
  acquiredToken,
  acquireTxn,
  blockingHolder,
  dataMoved,
  releaseTxn,
  releaseWithDataTxn,
  renewTxn,
  renewWithDataTxn,
  writeDataTxn,
  writtenRevision,
} from './etcd-ops.js';
import { grantOf, refusalOf, undoGrants } from './etcd-overwrite.js';
import { recordOf } from './etcd-record.js';
import { ordered } from './etcd-rpc.js';

/**
 * How many times one data write is sent when each finds the data key moved by another write under
 * the same token (one landed late, or the caller's own concurrent writes) before it gives up.
 */
const DATA_WRITE_TRIES = 4;

/**
 * The single-lease transitions: each one transaction, grouped with the others asked while one is
 * on the wire (see `Coalescer`); the group ones, `acquireAll` and `acquireFirst`; the read of one
 * record.
 */
export class EtcdTransitions implements LeaseTransitions {
  private readonly txns: Coalescer;
  /** The data write of each resource last asked, which the next one waits for (`writingData`). */
  private readonly dataWrites = new Map<string, Promise<unknown>>();

  constructor(
    private readonly ctx: EtcdContext,
    /** What a contender allows past `expiresAt` before a record looks free (the store's `expiryLagMs`). */
    private readonly allowanceMs: number,
  ) {
    this.txns = new Coalescer(ctx.rpc, ctx.maxTxnOps);
  }

  /** One range read of the resource's keys. */
  async get(resource: string): Promise<LeaseRecord | null> {
    const { start, end } = this.ctx.keys.resource(resource);
    const { kvs } = await this.ctx.rpc.range({ key: start, range_end: end });
    return recordOf(resource, byKind(this.ctx.keys, kvs));
  }

  /**
   * One transaction on the owner's etcd lease, plus a keep-alive of that lease sent alongside only
   * when it would not outlast the new hold as it stands. If etcd had let that lease lapse (or it
   * was revoked), the call retries once on a fresh one.
   */
  async tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    const keys = this.ctx.keys.cached(resource);
    const { answer, expiresAt, nonce } = await this.ctx.leases.attach(
      'tryAcquire',
      owner,
      ttlMs,
      (leaseId, expiresAt, nonce) =>
        this.txns.send(resource, acquireTxn(keys, owner, leaseId, expiresAt, nonce)),
    );
    const token = acquiredToken(answer, keys, owner, nonce);
    if (token === undefined) {
      blockingHolder(answer, keys, resource); // RECORD_INVALID when what stood in the way is not a record
      return null;
    }
    if (answer.succeeded) {
      const grant = grantOf(answer, keys, token);
      const refusal = refusalOf(grant, resource);
      if (refusal) throw await undoGrants(this.ctx, [grant], owner, refusal);
    }
    const { data, revision } = acquiredData(answer, keys);
    this.ctx.dataRevisions.note(resource, token, revision);
    return withData({ resource, owner, token, expiresAt, ttlMs }, data);
  }

  /**
   * The keep-alive of the owner's etcd lease that `renewMany` sends too (none when the lease was
   * granted or kept alive after this call began), then one transaction; with `data`, the data key
   * is written in it too.
   */
  async renew(
    lease: Lease,
    ttlMs: number | undefined,
    data?: LeaseData | null,
  ): Promise<Lease | null> {
    const since = performance.now();
    const sentAt = Date.now();
    const ttl = ttlMs ?? lease.ttlMs;
    const owned = await this.ctx.leases.live(lease.owner, ttl, since);
    const expiresAt = sentAt + ttl;
    const keys = this.ctx.keys.cached(lease.resource);
    let written: boolean;
    try {
      written =
        data === undefined
          ? (await this.txns.send(lease.resource, renewTxn(keys, lease, owned.id, expiresAt)))
              .succeeded
          : await this.writingData(lease, (expected) =>
              renewWithDataTxn(keys, lease, owned.id, expiresAt, expected, data),
            );
    } catch (error) {
      this.ctx.leases.drop(lease.owner, ttl, owned); // as in `renewMany`
      throw error;
    }
    if (!written) {
      this.ctx.dataRevisions.forget(lease);
      return null;
    }
    const renewed = {
      resource: lease.resource,
      owner: lease.owner,
      token: lease.token,
      expiresAt,
      ttlMs: ttl,
    };
    return data === undefined ? withData(renewed, lease.data) : withData(renewed, data);
  }

  /** One transaction; with `data`, the data key is written in it too. */
  async release(lease: LeaseRef, data?: LeaseData | null): Promise<boolean> {
    const keys = this.ctx.keys.cached(lease.resource);
    try {
      const released =
        data === undefined
          ? (await this.txns.send(lease.resource, releaseTxn(keys, lease))).succeeded
          : await this.writingData(lease, (expected) =>
              releaseWithDataTxn(keys, lease, expected, data),
            );
      this.ctx.dataRevisions.forget(lease); // released or lost, it ended
      return released;
    } catch (error) {
      this.ctx.leases.dropOwner(lease.owner); // as in `releaseMany`
      throw error;
    }
  }

  /** `renew`'s transaction with the data key written in it: still one transaction. */
  renewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    return this.renew(lease, ttlMs, data);
  }

  /** `release`'s transaction with the data key written in it: still one transaction. */
  releaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.release(lease, data);
  }

  /** One transaction whose compares cover every member (see `acquireGroup`). */
  acquireAll(resources: readonly string[], owner: string, ttlMs: number): Promise<Lease[] | null> {
    return acquireGroup(this.ctx, resources, owner, ttlMs);
  }

  /**
   * One chained transaction over the first 42 candidates (at `maxTxnOps` 128, see `firstTxn`);
   * beyond them, one `list` page and a chained transaction per 42 that look free (`pickFirst`).
   */
  acquireFirst(resources: readonly string[], owner: string, ttlMs: number): Promise<Lease | null> {
    const { ctx } = this;
    return pickFirst(
      {
        perTxn: firstPerTxn(ctx.maxTxnOps),
        chain: (chain) => acquireChain(ctx, chain, owner, ttlMs),
        list: (prefix, limit) => listRecords(ctx.rpc, ctx.keys, prefix, limit, ''),
        allowanceMs: this.allowanceMs,
      },
      resources,
    );
  }

  /**
   * One transaction with renew's compares that writes the data key alone: the hold key, its etcd
   * lease, the token and the record stay as they are.
   */
  writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const keys = this.ctx.keys.cached(lease.resource);
    return this.writingData(lease, (expected) => writeDataTxn(keys, lease, expected, data));
  }

  /**
   * Sends a transaction that writes lease data, after the data writes of the same resource asked
   * before it have been answered: each is then conditioned on the revision the one before it left
   * (see `DataRevisions`), so writes of one lease take one transaction each, in the order asked.
   */
  private writingData(
    lease: LeaseRef,
    txnOf: (expected: string) => EtcdTxnRequest,
  ): Promise<boolean> {
    const { resource } = lease;
    const before = this.dataWrites.get(resource);
    const write = before
      ? before.then(() => this.sendDataWrite(lease, txnOf))
      : this.sendDataWrite(lease, txnOf);
    const settled = write.then(
      () => undefined,
      () => undefined,
    );
    this.dataWrites.set(resource, settled);
    void settled.then(() => {
      if (this.dataWrites.get(resource) === settled) this.dataWrites.delete(resource);
    });
    return write;
  }

  /**
   * One data write, conditioned on the data key's revision as this store last saw it under
   * `lease`: one transaction when that is still where the key is. If another write under the same
   * token moved it since (a copy of a write answered as failed that landed after all), the
   * failure branch read the new revision and the write is sent once more with it; when the lease
   * is gone, false. After success the new revision is noted (a release forgets it after).
   */
  private async sendDataWrite(
    lease: LeaseRef,
    txnOf: (expected: string) => EtcdTxnRequest,
  ): Promise<boolean> {
    const revisions = this.ctx.dataRevisions;
    const keys = this.ctx.keys.cached(lease.resource);
    let expected = revisions.expected(lease);
    for (let tries = 1; ; tries++) {
      const answer = await this.txns.send(lease.resource, ordered(txnOf(expected)));
      if (answer.succeeded) {
        revisions.note(lease.resource, lease.token, writtenRevision(answer));
        return true;
      }
      const moved = dataMoved(answer, keys, lease);
      if (moved === undefined) {
        revisions.forget(lease);
        return false;
      }
      if (tries >= DATA_WRITE_TRIES) {
        throw new LeaseError(
          ErrorCode.STORE_UNAVAILABLE,
          `etcd: the data key of ${JSON.stringify(lease.resource)} moved under each of ${tries} writes by its holder (other writes under token ${lease.token} keep landing); nothing was written`,
          { resource: lease.resource },
        );
      }
      expected = moved;
    }
  }
}
