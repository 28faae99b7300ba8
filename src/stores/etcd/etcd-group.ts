import { LIMITS } from '../../core/options.js';
import type { EtcdResponseOp, EtcdTxnRequest, EtcdTxnResponse } from './etcd-driver.js';
import type { ResourceKeys } from './etcd-keys.js';
import { acquiredToken, acquireTxn } from './etcd-ops.js';

/*
 * All-or-nothing groups as one etcd transaction: the single acquire's compare, puts and read-back
 * (see `acquireTxn`) for every member, side by side in one flat transaction, so etcd checks every
 * member's hold key before writing any of them.
 */

/**
 * The largest group one transaction holds under `--max-txn-ops` `maxTxnOps`: each member adds
 * one compare, two puts and one read-back, and etcd counts the longest list (the puts), so
 * `maxTxnOps / 2` members (64 at the default 128), and never more than `LIMITS.groupMaxSize`.
 */
export function groupMaxFor(maxTxnOps: number): number {
  return Math.min(LIMITS.groupMaxSize, Math.floor(maxTxnOps / 2));
}

/**
 * Acquire of every member of a group, or of none: one compare per member (its hold key on no
 * etcd lease), and only when all of them hold, each member's hold key put on `leaseId` and its
 * token key written with the nonce and the new record, exactly as a single acquire writes them.
 * Otherwise nothing is written (no token moves) and each member's keys are read back, in input
 * order, so that a call the driver retried after it had landed is recognised by its nonce.
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
    success: parts.flatMap((p) => p.success),
    failure: parts.flatMap((p) => p.failure),
  };
}

/**
 * Each member's token after `groupTxn`, in input order, or `undefined` when a live lease stood in
 * the way of any member. A refused transaction whose read-backs show every member held by `owner`
 * with this call's nonce is this very call, landed on an earlier attempt the driver retried.
 */
export function groupTokens(
  response: EtcdTxnResponse,
  keys: readonly ResourceKeys[],
  owner: string,
  nonce: string,
): number[] | undefined {
  const tokens: number[] = [];
  for (let i = 0; i < keys.length; i++) {
    const own: EtcdResponseOp[] = response.succeeded
      ? response.responses.slice(2 * i, 2 * i + 2)
      : response.responses.slice(i, i + 1);
    const token = acquiredToken(
      { succeeded: response.succeeded, responses: own },
      keys[i]!,
      owner,
      nonce,
    );
    if (token === undefined) return undefined;
    tokens.push(token);
  }
  return tokens;
}
