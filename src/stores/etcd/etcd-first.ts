import { isLive, type Lease, type LeaseRecord } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import { LIMITS } from '../../core/options.js';
import { commonPrefix } from '../../core/store-defaults.js';
import type { EtcdContext } from './etcd-context.js';
import type { EtcdTxnRequest, EtcdTxnResponse } from './etcd-driver.js';
import type { ResourceKeys } from './etcd-keys.js';
import { acquiredData, acquiredToken, acquireTxn, acquireWrites } from './etcd-ops.js';
import { grantOf, refusalOf, undoGrants } from './etcd-overwrite.js';

/*
 * `acquireFirst` as one etcd transaction. Its compares check that no candidate's hold key is on
 * the owner's etcd lease used for this call; then a chain of nested transactions runs, one level
 * per candidate: level k compares candidate k's hold key as the single acquire does (see
 * `acquireTxn`); when it is on no etcd lease, the level runs the acquire's writes and data read
 * (as a nested transaction of their own, but at the last level, which has room for them flat),
 * and when it is on one, its else-branch is level k + 1. Otherwise (a candidate is on this very
 * etcd lease) nothing is written and every candidate's keys are read back: either this call
 * landed before and the driver sent it again (that candidate's token key holds this call's nonce;
 * the chain must not take a second one), or the same owner already holds a candidate with the
 * same TTL, and the chain is sent once more without the candidates it holds.
 *
 * etcd counts the outer transaction's compares (one per candidate), and gives the chain what that
 * leaves of `--max-txn-ops`; a level costs one operation plus the larger of its writes (three) and
 * the next level, the last level its three writes: k candidates cost k + 2 + k operations. The
 * chain nests two protobuf messages per level, and the driver refuses messages nested more than
 * 100 deep, which bounds k by `CHAIN_MAX` whatever `maxTxnOps` allows.
 */

/** The most candidates one chain holds, for the protobuf nesting limit (see above). */
export const CHAIN_MAX = 42;

/** Candidates one transaction holds under `--max-txn-ops` `maxTxnOps` (42 at the default 128). */
export function firstPerTxn(maxTxnOps: number): number {
  return Math.max(1, Math.min(CHAIN_MAX, Math.floor((maxTxnOps - 3) / 2)));
}

/** The transaction over `keys`, in order: the first candidate whose hold key is on no etcd lease is taken. */
export function firstTxn(
  keys: readonly ResourceKeys[],
  owner: string,
  leaseId: string,
  expiresAt: number,
  nonce: string,
): EtcdTxnRequest {
  let chain: EtcdTxnRequest | undefined;
  for (let i = keys.length - 1; i >= 0; i--) {
    const level = acquireTxn(keys[i]!, owner, leaseId, expiresAt, nonce);
    if (chain) {
      const writes = acquireWrites(keys[i]!, owner, leaseId, expiresAt, nonce);
      level.success = [{ request_txn: { compare: [], success: writes, failure: [] } }];
      level.failure = [{ request_txn: chain }];
    } else {
      level.failure = [];
    }
    chain = level;
  }
  return {
    compare: keys.map((k) => ({
      key: k.hold,
      target: 'Lease',
      result: 'NotEqual',
      lease: leaseId,
    })),
    success: [{ request_txn: chain! }],
    failure: keys.map((k) => ({ request_range: { key: k.start, range_end: k.end } })),
  };
}

/** What `firstTxn` answered. */
export type FirstAnswer =
  /**
   * Candidate `index` was taken (by this call, maybe on an earlier attempt), with `token`, and
   * handed the lease data `data` (absent when it had none).
   */
  | {
      readonly index: number;
      readonly token: number;
      readonly data?: LeaseData;
      /** The data key's mod revision at the grant (see `DataRevisions`). */
      readonly dataRevision: string;
    }
  /** Every candidate was held. */
  | undefined
  /** The owner holds these candidates on this etcd lease already: try the others. */
  | { readonly ownHeld: readonly number[] };

/** Reads `firstTxn`'s answer. */
export function firstTaken(
  response: EtcdTxnResponse,
  keys: readonly ResourceKeys[],
  owner: string,
  leaseId: string,
  nonce: string,
): FirstAnswer {
  if (!response.succeeded) {
    const ownHeld: number[] = [];
    for (let index = 0; index < keys.length; index++) {
      const read = { succeeded: false, responses: response.responses.slice(index, index + 1) };
      const token = acquiredToken(read, keys[index]!, owner, nonce);
      // This call, landed on an earlier attempt.
      if (token !== undefined) return taken(index, token, read, keys[index]!);
      const hold = read.responses[0]?.response_range?.kvs.find((kv) =>
        kv.key.equals(keys[index]!.hold),
      );
      if (hold && hold.lease === leaseId) ownHeld.push(index);
    }
    return { ownHeld };
  }
  let level: EtcdTxnResponse | null | undefined = response.responses[0]?.response_txn;
  for (let index = 0; index < keys.length && level; index++) {
    if (level.succeeded) {
      const last = index === keys.length - 1;
      const writes = last ? level : level.responses[0]?.response_txn;
      if (!writes) return undefined;
      const token = acquiredToken(writes, keys[index]!, owner, nonce);
      return token === undefined ? undefined : taken(index, token, writes, keys[index]!);
    }
    level = level.responses[0]?.response_txn;
  }
  return undefined;
}

/**
 * The answers of the writes with which `firstTxn` itself took candidate `index` (see
 * `grantOf`); `undefined` when this transaction wrote nothing (a call that had landed before).
 */
export function firstWrites(
  response: EtcdTxnResponse,
  index: number,
  count: number,
): EtcdTxnResponse | undefined {
  if (!response.succeeded) return undefined;
  let level: EtcdTxnResponse | null | undefined = response.responses[0]?.response_txn;
  for (let i = 0; i < index && level; i++) level = level.responses[0]?.response_txn;
  if (!level?.succeeded) return undefined;
  return index === count - 1 ? level : (level.responses[0]?.response_txn ?? undefined);
}

function taken(
  index: number,
  token: number,
  response: EtcdTxnResponse,
  keys: ResourceKeys,
): FirstAnswer {
  const { data, revision: dataRevision } = acquiredData(response, keys);
  return data === null ? { index, token, dataRevision } : { index, token, data, dataRevision };
}

/** What `pickFirst` needs from the store. */
export interface FirstOps {
  /** Candidates per transaction (see `firstPerTxn`). */
  readonly perTxn: number;
  /** One chained transaction over `resources`: the lease on the candidate it took, or `null`. */
  chain(resources: readonly string[]): Promise<Lease | null>;
  list(prefix: string, limit: number): Promise<LeaseRecord[]>;
  /** What a contender allows past `expiresAt` before a record looks free (`expiryLagMs`). */
  readonly allowanceMs: number;
}

/**
 * `acquireFirst` over any number of candidates: the first `perTxn` in one chained transaction,
 * which is the whole call when one of them is free; beyond them, the rest are read with one
 * `list` page and only those that look free (released, lapsed by this machine's clock, or never
 * written) are tried, `perTxn` at a time, in order. Looking is advice: every grant is etcd's
 * compare inside a transaction.
 */
export async function pickFirst(
  ops: FirstOps,
  resources: readonly string[],
): Promise<Lease | null> {
  const first = await ops.chain(resources.slice(0, ops.perTxn));
  if (first || resources.length <= ops.perTxn) return first;
  const rest = resources.slice(ops.perTxn);
  const limit = Math.min(LIMITS.listMaxLimit, 2 * rest.length + 16);
  const seen = new Map<string, LeaseRecord>();
  for (const record of await ops.list(commonPrefix(rest), limit)) seen.set(record.resource, record);
  const now = Date.now();
  const free = rest.filter((r) => {
    const record = seen.get(r);
    return !record || !isLive(record, now, ops.allowanceMs);
  });
  for (let start = 0; start < free.length; start += ops.perTxn) {
    const lease = await ops.chain(free.slice(start, start + ops.perTxn));
    if (lease) return lease;
  }
  return null;
}

/**
 * `firstTxn` over `resources` on the owner's etcd lease, as `tryAcquire` picks and keeps it; sent
 * once more without the candidates this owner already holds on that etcd lease, if any.
 */
export async function acquireChain(
  ctx: EtcdContext,
  resources: readonly string[],
  owner: string,
  ttlMs: number,
): Promise<Lease | null> {
  const { answer, expiresAt } = await ctx.leases.attach(
    'acquireFirst',
    owner,
    ttlMs,
    async (leaseId, expiresAt, nonce) => {
      let left = [...resources];
      for (;;) {
        const keys = left.map((r) => ctx.keys.of(r));
        const txn = firstTxn(keys, owner, leaseId, expiresAt, nonce);
        const response = await ctx.rpc.txn(txn);
        const taken = firstTaken(response, keys, owner, leaseId, nonce);
        const writes = taken && 'index' in taken && firstWrites(response, taken.index, keys.length);
        if (writes) {
          const grant = grantOf(writes, keys[taken.index]!, taken.token);
          const refusal = refusalOf(grant, left[taken.index]!);
          if (refusal) throw await undoGrants(ctx, [grant], owner, refusal);
        }
        if (taken === undefined || 'index' in taken)
          return taken && { ...taken, resource: left[taken.index]! };
        const own = new Set(taken.ownHeld);
        left = left.filter((_, i) => !own.has(i));
        if (left.length === 0 || own.size === 0) return undefined;
      }
    },
  );
  if (!answer) return null;
  ctx.dataRevisions.note(answer.resource, answer.token, answer.dataRevision);
  return withData(
    { resource: answer.resource, owner, token: answer.token, expiresAt, ttlMs },
    answer.data,
  );
}
