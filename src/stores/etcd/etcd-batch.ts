import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { withData } from '../../core/lease-data.js';
import type { AcquireOutcome } from '../../core/store.js';
import type { EtcdContext } from './etcd-context.js';
import type { EtcdTxnRequest, EtcdTxnResponse } from './etcd-driver.js';
import type { ResourceKeys } from './etcd-keys.js';
import type { OwnerLease } from './etcd-leases.js';
import {
  acquiredData,
  acquiredToken,
  acquireTxn,
  blockingHolder,
  releaseTxn,
  renewTxn,
} from './etcd-ops.js';
import { grantOf, refusalOf, undoGrants, type Grant } from './etcd-overwrite.js';
import type { EtcdRpc } from './etcd-rpc.js';

/** How one batch becomes nested transactions and their answers become results. */
export interface NestedBatch<T, R> {
  /** Items with the same key never share an outer transaction (etcd refuses two writes to a key). */
  keyOf(item: T): string;
  /** The item's own transaction; every item's has the same shape (see `opsNeeded`). */
  txnOf(item: T, index: number): EtcdTxnRequest;
  /** The item's result from its transaction's answer. */
  answerOf(item: T, index: number, answer: EtcdTxnResponse): R;
}

/**
 * Runs one nested transaction per item inside outer transactions without compares, so each item
 * gets its own outcome from one round trip per outer transaction; results in input order.
 *
 * etcd counts a transaction's operations as the longest of its compare, success and failure
 * lists, and gives each nested transaction only what that leaves of `--max-txn-ops`: an outer
 * transaction of `n` nested ones that each need `k` therefore needs `n + k`, so it carries
 * `maxTxnOps − k` items (126 acquires or releases, 125 renewals at the default 128).
 *
 * The outer transactions of one round are sent concurrently, each built just before it is sent
 * and with a turn of the event loop between them, and each answer is read as it arrives: a batch
 * of thousands never holds the loop for longer than one outer transaction takes to build or read
 * (design rule 6). All of them settle before this answers; then the first failure is thrown.
 * An item whose key repeats goes in a later round, after the first settled.
 */
export async function sendNested<T, R>(
  rpc: EtcdRpc,
  maxTxnOps: number,
  items: readonly T[],
  batch: NestedBatch<T, R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  if (items.length === 0) return out;
  const size = Math.max(1, maxTxnOps - opsNeeded(batch.txnOf(items[0]!, 0)));
  for (const round of rounds(items, batch.keyOf)) {
    const sent: Promise<void>[] = [];
    for (let start = 0; start < round.length; start += size) {
      if (start > 0) await new Promise((resolve) => setImmediate(resolve));
      const indexes = round.slice(start, start + size);
      const request = {
        compare: [],
        success: indexes.map((i) => ({ request_txn: batch.txnOf(items[i]!, i) })),
        failure: [],
      };
      sent.push(
        rpc.txn(request).then((response) => {
          indexes.forEach((i, k) => {
            out[i] = batch.answerOf(items[i]!, i, response.responses[k]?.response_txn ?? NO_ANSWER);
          });
        }),
      );
    }
    const settled = await Promise.allSettled(sent);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
  }
  return out;
}

/** What a nested transaction missing from an answer counts as: not applied. */
const NO_ANSWER: EtcdTxnResponse = Object.freeze({ succeeded: false, responses: [] });

/**
 * The `--max-txn-ops` a transaction needs: etcd counts the longest of its compare, success and
 * failure lists, and lets each nested transaction use only what that leaves.
 */
export function opsNeeded(txn: EtcdTxnRequest): number {
  const own = Math.max(txn.compare.length, txn.success.length, txn.failure.length);
  const nested = [...txn.success, ...txn.failure].map((op) =>
    op.request_txn ? opsNeeded(op.request_txn) : 0,
  );
  return own + Math.max(0, ...nested);
}

/** Indexes of `items` in rounds where each key appears at most once, in input order. */
function rounds<T>(items: readonly T[], keyOf: (item: T) => string): number[][] {
  const seen = new Map<string, number>();
  const out: number[][] = [];
  items.forEach((item, i) => {
    const key = keyOf(item);
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (out[round] ??= []).push(i);
  });
  return out;
}

/**
 * The single acquire's transaction for each resource, nested: one outer transaction per 126
 * resources (at `maxTxnOps` 128), sent concurrently, on the owner's etcd lease picked, kept
 * alive when needed and retried once exactly as `tryAcquire` does. Each resource is its own
 * compare-and-set; one that is held answers with the holder's record, read in its
 * transaction's else-branch. A holder's keys that are not a record fail the whole batch with
 * `RECORD_INVALID`, after the leases it granted are given back.
 */
export async function acquireMany(
  ctx: EtcdContext,
  resources: readonly string[],
  owner: string,
  ttlMs: number,
): Promise<AcquireOutcome[]> {
  const keys = new Array<ResourceKeys>(resources.length);
  let invalid: LeaseError | undefined;
  const undo: Grant[] = [];
  const { answer } = await ctx.leases.attach(
    'acquireMany',
    owner,
    ttlMs,
    (leaseId, expiresAt, nonce) =>
      sendNested(ctx.rpc, ctx.maxTxnOps, resources, {
        keyOf: (resource) => resource,
        txnOf: (resource, i) =>
          acquireTxn((keys[i] = ctx.keys.of(resource)), owner, leaseId, expiresAt, nonce),
        answerOf: (resource, i, response): AcquireOutcome => {
          const token = acquiredToken(response, keys[i]!, owner, nonce);
          if (token !== undefined && response.succeeded) {
            const grant = grantOf(response, keys[i]!, token);
            const refusal = refusalOf(grant, resource);
            if (refusal) {
              invalid ??= refusal;
              undo.push(grant);
              return { resource, lease: null };
            }
          }
          if (token !== undefined) {
            const { data, revision } = acquiredData(response, keys[i]!);
            ctx.dataRevisions.note(resource, token, revision);
            return {
              resource,
              lease: withData({ resource, owner, token, expiresAt, ttlMs }, data),
            };
          }
          let holder: LeaseRecord | undefined;
          try {
            holder = blockingHolder(response, keys[i]!, resource);
          } catch (error) {
            if (!(error instanceof LeaseError) || error.code !== ErrorCode.RECORD_INVALID)
              throw error;
            invalid ??= error;
          }
          return holder ? { resource, lease: null, holder } : { resource, lease: null };
        },
      }),
  );
  if (invalid === undefined) return answer;
  // A record that is not one fails the batch, once what it granted meanwhile is given back:
  // grants over such keys undone, the others released.
  if (undo.length > 0) await undoGrants(ctx, undo, owner, invalid);
  const granted = answer.flatMap((outcome) => (outcome.lease ? [outcome.lease] : []));
  if (granted.length > 0) await releaseMany(ctx, granted);
  throw invalid;
}

/** The leases of one owner and TTL in a renewal batch, and the etcd lease they will be on. */
interface OwnerGroup {
  readonly owner: string;
  readonly ttlMs: number;
  readonly lease: Promise<OwnerLease>;
}

/**
 * One keep-alive per owner and TTL in the batch, then one transaction per 125 leases (sent
 * concurrently) that checks each lease, moves its hold key onto that owner's current etcd lease
 * and records the new `expiresAt`.
 */
export async function renewMany(
  ctx: EtcdContext,
  leases: readonly Lease[],
  ttlMs: number | undefined,
): Promise<(Lease | null)[]> {
  const since = performance.now();
  const sentAt = Date.now();
  const groups = new Map<string, OwnerGroup>();
  const groupOf = leases.map((lease) => {
    const ttl = ttlMs ?? lease.ttlMs;
    const key = `${ttl}:${lease.owner}`;
    let group = groups.get(key);
    if (!group) {
      group = {
        owner: lease.owner,
        ttlMs: ttl,
        lease: ctx.leases.live(lease.owner, ttl, since),
      };
      groups.set(key, group);
    }
    return group;
  });
  const settled = await Promise.allSettled([...groups.values()].map((g) => g.lease));
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  const owned = new Map<OwnerGroup, OwnerLease>();
  for (const group of groups.values()) owned.set(group, await group.lease);
  const leaseOf = (i: number): OwnerLease => owned.get(groupOf[i]!)!;
  let ok: boolean[];
  try {
    ok = await perLease(ctx, leases, (lease, i) =>
      renewTxn(ctx.keys.of(lease.resource), lease, leaseOf(i).id, sentAt + (ttlMs ?? lease.ttlMs)),
    );
  } catch (error) {
    // Some keys may now sit on these leases with holders that will give up: keep them alive no more.
    for (const [group, lease] of owned) ctx.leases.drop(group.owner, group.ttlMs, lease);
    throw error;
  }
  // The data key is neither sent nor read: the renewed lease carries the data it came with.
  return leases.map((lease, i) =>
    ok[i]
      ? withData(
          {
            resource: lease.resource,
            owner: lease.owner,
            token: lease.token,
            expiresAt: sentAt + (ttlMs ?? lease.ttlMs),
            ttlMs: ttlMs ?? lease.ttlMs,
          },
          lease.data,
        )
      : null,
  );
}

/** One transaction per 126 leases, sent concurrently. */
export async function releaseMany(
  ctx: EtcdContext,
  leases: readonly LeaseRef[],
): Promise<boolean[]> {
  try {
    return await perLease(ctx, leases, (lease) => releaseTxn(ctx.keys.of(lease.resource), lease));
  } catch (error) {
    // The holders count these as given up; keys still held must not ride on later keep-alives.
    for (const owner of new Set(leases.map((l) => l.owner))) ctx.leases.dropOwner(owner);
    throw error;
  }
}

/** One nested transaction per lease (see `sendNested`): whether each one's compares held. */
function perLease<T extends LeaseRef>(
  ctx: EtcdContext,
  leases: readonly T[],
  txnOf: (lease: T, index: number) => EtcdTxnRequest,
): Promise<boolean[]> {
  return sendNested(ctx.rpc, ctx.maxTxnOps, leases, {
    keyOf: (lease) => lease.resource,
    txnOf,
    answerOf: (_, __, answer) => answer.succeeded,
  });
}
