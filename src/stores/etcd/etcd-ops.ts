import type { LeaseRecord, LeaseRef } from '../../core/lease.js';
import type { EtcdCompare, EtcdKeyValue, EtcdTxnRequest, EtcdTxnResponse } from './etcd-driver.js';
import {
  encodeRecord,
  encodeToken,
  ownerBytes,
  recordOf,
  RELEASED,
  safeCount,
  writtenWith,
  type ResourceKeys,
  type ResourceKvs,
} from './etcd-keys.js';

/*
 * The transactions behind each transition (see etcd-keys.ts for the keys). Each is one atomic
 * etcd txn; batches nest one such txn per lease inside an outer txn without compares, so every
 * lease gets its own outcome from one round trip.
 */

/** Still held by `lease`: the hold key exists with its owner, and no acquire came after its token. */
function heldBy(keys: ResourceKeys, lease: LeaseRef): EtcdCompare[] {
  return [
    { key: keys.token, target: 'Version', result: 'Equal', version: lease.token },
    { key: keys.hold, target: 'Value', result: 'Equal', value: ownerBytes(lease.owner) },
  ];
}

/**
 * Acquire: only when the hold key is on no etcd lease (etcd compares an absent key's lease as 0,
 * so this is "never held, released, or deleted by etcd when its lease lapsed"). Writes the hold
 * key on `leaseId` and the token key, whose previous version gives the new token and whose value
 * carries the nonce and the new record. On failure it reads the resource's three keys back in one
 * range: the record of the lease that stood in the way, and a call the driver retried after it
 * had landed is recognised by its nonce.
 */
export function acquireTxn(
  keys: ResourceKeys,
  owner: string,
  leaseId: string,
  expiresAt: number,
  nonce: string,
): EtcdTxnRequest {
  return {
    compare: [{ key: keys.hold, target: 'Lease', result: 'Equal', lease: 0 }],
    success: [
      { request_put: { key: keys.hold, value: ownerBytes(owner), lease: leaseId } },
      {
        request_put: {
          key: keys.token,
          value: encodeToken(nonce, owner, expiresAt),
          prev_kv: true,
        },
      },
    ],
    failure: [{ request_range: { key: keys.start, range_end: keys.end } }],
  };
}

/** The keys an acquire's failure branch read, by kind. */
function readBack(response: EtcdTxnResponse, keys: ResourceKeys): ResourceKvs {
  const kvs = response.responses[0]?.response_range?.kvs ?? [];
  const find = (key: Buffer): EtcdKeyValue | undefined => kvs.find((kv) => kv.key.equals(key));
  return { hold: find(keys.hold), record: find(keys.record), token: find(keys.token) };
}

/** The token an acquire got, or `undefined` when someone else holds the resource. */
export function acquiredToken(
  response: EtcdTxnResponse,
  keys: ResourceKeys,
  owner: string,
  nonce: string,
): number | undefined {
  if (response.succeeded) {
    const prev = response.responses[1]?.response_put?.prev_kv;
    return prev ? safeCount(prev.version, prev.key) + 1 : 1;
  }
  const { hold, token } = readBack(response, keys);
  if (!hold || !token || !writtenWith(token, nonce)) return undefined;
  if (!hold.value.equals(ownerBytes(owner))) return undefined;
  return safeCount(token.version, token.key); // this very call landed on an earlier attempt
}

/**
 * After an acquire that got no token: the record of the live lease that stood in the way, read in
 * the same transaction (its hold key was on an etcd lease then), or `undefined` when the keys do
 * not say.
 */
export function blockingHolder(
  response: EtcdTxnResponse,
  keys: ResourceKeys,
  resource: string,
): LeaseRecord | undefined {
  if (response.succeeded) return undefined;
  const found = readBack(response, keys);
  return (found.hold && recordOf(resource, found)) ?? undefined;
}

/**
 * Renew: if still held by `lease`, moves the hold key onto `leaseId` (unless it is there already,
 * which saves a write) and records the new `expiresAt`.
 */
export function renewTxn(
  keys: ResourceKeys,
  lease: LeaseRef,
  leaseId: string,
  expiresAt: number,
): EtcdTxnRequest {
  return {
    compare: heldBy(keys, lease),
    success: [
      {
        request_txn: {
          compare: [{ key: keys.hold, target: 'Lease', result: 'Equal', lease: leaseId }],
          success: [],
          failure: [
            {
              request_put: {
                key: keys.hold,
                value: ownerBytes(lease.owner),
                lease: leaseId,
              },
            },
          ],
        },
      },
      { request_put: { key: keys.record, value: encodeRecord(lease.owner, expiresAt) } },
    ],
    failure: [],
  };
}

/**
 * Release: if still held by `lease`, empties the hold key and detaches it from its etcd lease (a
 * put without a lease), which marks the resource released with its token kept.
 */
export function releaseTxn(keys: ResourceKeys, lease: LeaseRef): EtcdTxnRequest {
  return {
    compare: heldBy(keys, lease),
    success: [{ request_put: { key: keys.hold, value: RELEASED } }],
    failure: [],
  };
}
