import { ErrorCode, LeaseError } from '../../core/errors.js';
import { invalidRecord, recordOwner } from '../../core/record-check.js';
import type {
  EtcdKeyValue,
  EtcdRequestOp,
  EtcdTxnRequest,
  EtcdTxnResponse,
} from './etcd-driver.js';
import type { EtcdContext } from './etcd-context.js';
import type { ResourceKeys } from './etcd-keys.js';
import { checkTokenKey } from './etcd-record.js';

/*
 * An acquire decides "free" by the hold key being on no etcd lease and takes its token from the
 * token key's version, all inside its transaction: no value can make a held record free or lower
 * a token. But etcd cannot compare what a value holds, so a grant can land on keys leasehold
 * would never leave: a token key whose value is not a record, a hold key naming an owner on no
 * etcd lease, or other keys of a resource without its token key (deleted by hand: the grant would
 * start the tokens again at 1). The grant's own answer shows what it replaced (`prev_kv` of its
 * puts, and its data read); such a grant is undone at once, the keys put back as they were, and
 * the call answers `RECORD_INVALID`. The grant is never handed out. That costs one more
 * transaction, and only on such keys: a healthy acquire is the same one round trip.
 */

/** What a grant replaced: the keys as they were before it, to put back. */
export interface Grant {
  readonly keys: ResourceKeys;
  /** The token the grant wrote: the token key's version since. */
  readonly token: number;
  /** The hold key as it was (absent: there was none). */
  readonly hold?: EtcdKeyValue;
  /** The token key as it was (absent: there was none). */
  readonly previous?: EtcdKeyValue;
  /** The data key the grant read (absent: there was none). */
  readonly data?: EtcdKeyValue;
}

/** What a granted acquire replaced, from its writes' answers (see `acquireWrites`). */
export function grantOf(writes: EtcdTxnResponse, keys: ResourceKeys, token: number): Grant {
  return {
    keys,
    token,
    hold: writes.responses[0]?.response_put?.prev_kv ?? undefined,
    previous: writes.responses[1]?.response_put?.prev_kv ?? undefined,
    data: writes.responses[2]?.response_range?.kvs[0],
  };
}

/**
 * `RECORD_INVALID` when what `grant` replaced was not a record leasehold writes; `undefined` for a
 * healthy grant (a new resource, or a released or lapsed record).
 */
export function refusalOf(grant: Grant, resource: string): LeaseError | undefined {
  const { hold, previous, data } = grant;
  if (!previous && !hold && !data) return undefined; // a new resource: the common first grant
  try {
    if (!previous) throw invalidRecord(resource, 'its token key is missing beside its other keys');
    checkTokenKey(previous, resource);
    if (hold && hold.value.length > 0) {
      recordOwner(resource, hold.value.toString('utf8'));
      throw invalidRecord(resource, 'its hold key names an owner but is on no etcd lease');
    }
    return undefined;
  } catch (error) {
    if (!(error instanceof LeaseError) || error.code !== ErrorCode.RECORD_INVALID) throw error;
    return error;
  }
}

/**
 * Puts the keys of `grants` back as they were (the token key's version moves on once more: tokens
 * never go back), provided no later acquire moved any of them (each token key still at the
 * version its grant wrote). The hold keys go back on no etcd lease, as the grants found them. One
 * compare and two operations per grant.
 */
export function undoTxn(grants: readonly Grant[]): EtcdTxnRequest {
  const restore = (key: Buffer, kv: EtcdKeyValue | undefined): EtcdRequestOp =>
    kv ? { request_put: { key, value: kv.value } } : { request_delete_range: { key } };
  return {
    compare: grants.map((g) => ({
      key: g.keys.token,
      target: 'Version',
      result: 'Equal',
      version: g.token,
    })),
    success: grants.flatMap((g) => [
      restore(g.keys.token, g.previous),
      restore(g.keys.hold, g.hold),
    ]),
    failure: [],
  };
}

/**
 * Puts back the keys of grants that landed on keys that are not a record, in transactions that
 * keep to `maxTxnOps`; answers `refusal`, to throw. If that fails, the grants stay on the owner's
 * etcd lease, which is then used for nothing new so that it lapses.
 */
export async function undoGrants(
  ctx: EtcdContext,
  grants: readonly Grant[],
  owner: string,
  refusal: LeaseError,
): Promise<LeaseError> {
  const per = Math.max(1, Math.floor(ctx.maxTxnOps / 2));
  try {
    for (let start = 0; start < grants.length; start += per)
      await ctx.rpc.txn(undoTxn(grants.slice(start, start + per)));
  } catch {
    ctx.leases.dropOwner(owner);
  }
  return refusal;
}

/** The first member's refusal among a group's grants (see `refusalOf`). */
export function firstRefusal(
  grants: readonly Grant[],
  resources: readonly string[],
): LeaseError | undefined {
  for (const [i, grant] of grants.entries()) {
    const refusal = refusalOf(grant, resources[i]!);
    if (refusal) return refusal;
  }
  return undefined;
}
