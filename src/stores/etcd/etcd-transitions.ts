import type { Lease, LeaseRef } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import { Coalescer } from './etcd-coalesce.js';
import type { EtcdContext } from './etcd-context.js';
import type { EtcdTxnRequest, EtcdTxnResponse } from './etcd-driver.js';
import {
  acquiredData,
  acquiredToken,
  acquireTxn,
  blockingHolder,
  releaseTxn,
  releaseWithDataTxn,
  renewTxn,
  renewWithDataTxn,
  writeDataTxn,
} from './etcd-ops.js';
import { grantOf, refusalOf, undoGrants } from './etcd-overwrite.js';
import { ordered } from './etcd-rpc.js';

/**
 * The single-lease transitions: each one transaction, grouped with the others asked while one is
 * on the wire (see `Coalescer`).
 */
export class EtcdTransitions {
  private readonly txns: Coalescer;

  constructor(private readonly ctx: EtcdContext) {
    this.txns = new Coalescer(ctx.rpc, ctx.maxTxnOps);
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
    return withData({ resource, owner, token, expiresAt, ttlMs }, acquiredData(answer, keys));
  }

  /**
   * The keep-alive of the owner's etcd lease that `renewMany` sends too (none when the lease was
   * granted or kept alive after this call began), then one transaction; with `data`, the data key
   * is written in it too.
   */
  async renew(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null | undefined,
  ): Promise<Lease | null> {
    const since = performance.now();
    const sentAt = Date.now();
    const ttl = ttlMs ?? lease.ttlMs;
    const owned = await this.ctx.leases.live(lease.owner, ttl, since);
    const expiresAt = sentAt + ttl;
    const keys = this.ctx.keys.cached(lease.resource);
    let answer: EtcdTxnResponse;
    try {
      answer = await this.txns.send(
        lease.resource,
        data === undefined
          ? renewTxn(keys, lease, owned.id, expiresAt)
          : ordered(renewWithDataTxn(keys, lease, owned.id, expiresAt, data)),
      );
    } catch (error) {
      this.ctx.leases.drop(lease.owner, ttl, owned); // as in `renewMany`
      throw error;
    }
    if (!answer.succeeded) return null;
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
  release(lease: LeaseRef, data?: LeaseData | null): Promise<boolean> {
    const keys = this.ctx.keys.cached(lease.resource);
    return this.releaseOne(
      data === undefined ? releaseTxn(keys, lease) : ordered(releaseWithDataTxn(keys, lease, data)),
      lease,
    );
  }

  /**
   * One transaction with renew's compares that writes the data key alone: the hold key, its etcd
   * lease, the token and the record stay as they are.
   */
  async writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const txn = ordered(writeDataTxn(this.ctx.keys.cached(lease.resource), lease, data));
    return (await this.txns.send(lease.resource, txn)).succeeded;
  }

  private async releaseOne(txn: EtcdTxnRequest, lease: LeaseRef): Promise<boolean> {
    try {
      return (await this.txns.send(lease.resource, txn)).succeeded;
    } catch (error) {
      this.ctx.leases.dropOwner(lease.owner); // as in `releaseMany`
      throw error;
    }
  }
}
