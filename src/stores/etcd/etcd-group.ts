import type { Lease } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import { LIMITS } from '../../core/options.js';
import type { EtcdContext } from './etcd-context.js';
import type { EtcdTxnRequest, EtcdTxnResponse } from './etcd-driver.js';
import type { ResourceKeys } from './etcd-keys.js';
import {
  acquiredData,
  acquiredToken,
  acquireTxn,
  acquireWrites,
  blockingHolder,
} from './etcd-ops.js';
import { firstRefusal, grantOf, undoGrants } from './etcd-overwrite.js';

/*
 * All-or-nothing groups as one etcd transaction: the single acquire's compare for every member,
 * side by side, so etcd checks every member's hold key before writing any of them; then each
 * member's writes and data read (see `acquireWrites`) as a nested transaction of their own, or
 * each member's read-back.
 */

/**
 * The largest group one transaction holds under `--max-txn-ops` `maxTxnOps`: each member adds
 * one compare, one nested transaction of three operations (two puts, one read) and one read-back,
 * and etcd counts the longest list plus the nested transaction's three, so `maxTxnOps − 3`
 * members would fit; the group size stays what it was before the data read, `maxTxnOps / 2`
 * members (64 at the default 128), and never more than `LIMITS.groupMaxSize`.
 */
export function groupMaxFor(maxTxnOps: number): number {
  return Math.min(LIMITS.groupMaxSize, Math.floor(maxTxnOps / 2), maxTxnOps - 3);
}

/**
 * Acquire of every member of a group, or of none: one compare per member (its hold key on no
 * etcd lease), and only when all of them hold, each member's hold key put on `leaseId`, its token
 * key written with the nonce and the new record and its data key read, exactly as a single
 * acquire does. Otherwise nothing is written (no token moves) and each member's keys are read
 * back, in input order, so that a call the driver retried after it had landed is recognised by
 * its nonce.
 */
export function groupTxn(
  keys: readonly ResourceKeys[],
  owner: string,
  leaseId: string,
  expiresAt: number,
  nonce: string,
): EtcdTxnRequest {
  const parts = keys.map((k) => acquireTxn(k, owner, leaseId, expiresAt, nonce));
  return {
    compare: parts.flatMap((p) => p.compare),
    success: keys.map((k) => ({
      request_txn: {
        compare: [],
        success: acquireWrites(k, owner, leaseId, expiresAt, nonce),
        failure: [],
      },
    })),
    failure: parts.flatMap((p) => p.failure),
  };
}

/** One member's grant in a group: its token and the lease data it was handed. */
export interface MemberGrant {
  readonly token: number;
  readonly data: LeaseData | null;
  /** The data key's mod revision at the grant (see `DataRevisions`). */
  readonly dataRevision: string;
}

/**
 * Each member's grant after `groupTxn`, in input order, or `undefined` when a live lease stood in
 * the way of any member. A refused transaction whose read-backs show every member held by `owner`
 * with this call's nonce is this very call, landed on an earlier attempt the driver retried.
 */
export function groupGrants(
  response: EtcdTxnResponse,
  keys: readonly ResourceKeys[],
  owner: string,
  nonce: string,
): MemberGrant[] | undefined {
  const grants: MemberGrant[] = [];
  for (let i = 0; i < keys.length; i++) {
    const own: EtcdTxnResponse = response.succeeded
      ? (response.responses[i]?.response_txn ?? { succeeded: false, responses: [] })
      : { succeeded: false, responses: response.responses.slice(i, i + 1) };
    const token = acquiredToken(own, keys[i]!, owner, nonce);
    if (token === undefined) return undefined;
    const { data, revision } = acquiredData(own, keys[i]!);
    grants.push({ token, data, dataRevision: revision });
  }
  return grants;
}

/** `groupGrants`, the tokens alone. */
export function groupTokens(
  response: EtcdTxnResponse,
  keys: readonly ResourceKeys[],
  owner: string,
  nonce: string,
): number[] | undefined {
  return groupGrants(response, keys, owner, nonce)?.map((g) => g.token);
}

/** A group member's missing answer: no writes seen. */
const NO_WRITES: EtcdTxnResponse = Object.freeze({ succeeded: false, responses: [] });

/**
 * `acquireAll`: one transaction whose compares cover every member (see `groupTxn`), on the owner's
 * etcd lease picked, kept alive when needed and retried once exactly as `tryAcquire` does.
 */
export async function acquireGroup(
  ctx: EtcdContext,
  resources: readonly string[],
  owner: string,
  ttlMs: number,
): Promise<Lease[] | null> {
  const keys = resources.map((r) => ctx.keys.of(r));
  const { answer, expiresAt } = await ctx.leases.attach(
    'acquireAll',
    owner,
    ttlMs,
    async (leaseId, expiresAt, nonce) => {
      const txn = groupTxn(keys, owner, leaseId, expiresAt, nonce);
      const response = await ctx.rpc.txn(txn);
      const grants = groupGrants(response, keys, owner, nonce);
      // Refused: RECORD_INVALID when a member's keys read back are not a record.
      if (!grants && !response.succeeded)
        resources.forEach((resource, i) => {
          const read = { succeeded: false, responses: response.responses.slice(i, i + 1) };
          blockingHolder(read, keys[i]!, resource);
        });
      // Granted over a member's keys that are not a record: every member is put back.
      if (grants && response.succeeded) {
        const taken = grants.map(({ token }, i) =>
          grantOf(response.responses[i]?.response_txn ?? NO_WRITES, keys[i]!, token),
        );
        const refusal = firstRefusal(taken, resources);
        if (refusal) throw await undoGrants(ctx, taken, owner, refusal);
      }
      return grants;
    },
  );
  return (
    answer?.map(({ token, data, dataRevision }, i) => {
      ctx.dataRevisions.note(resources[i]!, token, dataRevision);
      return withData({ resource: resources[i]!, owner, token, expiresAt, ttlMs }, data);
    }) ?? null
  );
}
