import type { LeaseRecord, LeaseRef } from '../../core/lease.js';
import type { EtcdCompare, EtcdKeyValue, EtcdTxnRequest, EtcdTxnResponse } from './etcd-driver.js';
import { encodeRecord, recordOf, safeCount, type ResourceKeys } from './etcd-keys.js';

/*
 * The transactions behind each transition (see etcd-keys.ts for the keys). Each is one atomic
 * etcd txn; batches nest one such txn per lease inside an outer txn without compares, so every
 * lease gets its own outcome from one round trip.
 */

/** Still held by `lease`: the hold key exists with its owner, and no acquire came after its token. */
function heldBy(keys: ResourceKeys, lease: LeaseRef): EtcdCompare[] {
  return [
    { key: keys.token, target: 'Version', result: 'Equal', version: lease.token },
    { key: keys.hold, target: 'Value', result: 'Equal', value: Buffer.from(lease.owner, 'utf8') },
  ];
}

/**
 * Acquire: only when no hold key exists (never held, released, or deleted by etcd when its lease
 * lapsed). Writes the hold key on `leaseId`, the record, and the token key, whose previous version
 * gives the new token. On failure it reads the resource's three keys back in one range: the record
 * of the lease that stood in the way, and a call the driver retried after it had landed is
 * recognised by its nonce.
 */
export function acquireTxn(
  keys: ResourceKeys,
  owner: string,
  leaseId: string,
  expiresAt: number,
  nonce: Buffer,
): EtcdTxnRequest {
  return {
    compare: [{ key: keys.hold, target: 'Create', result: 'Equal', create_revision: 0 }],
    success: [
      { request_put: { key: keys.hold, value: Buffer.from(owner, 'utf8'), lease: leaseId } },
      { request_put: { key: keys.record, value: encodeRecord(owner, expiresAt) } },
      { request_put: { key: keys.token, value: nonce, prev_kv: true } },
    ],
    failure: [{ request_range: { key: keys.start, range_end: keys.end } }],
  };
}

/** The keys an acquire's failure branch read, by kind. */
function readBack(
  response: EtcdTxnResponse,
  keys: ResourceKeys,
): { hold?: EtcdKeyValue; record?: EtcdKeyValue; token?: EtcdKeyValue } {
  const kvs = response.responses[0]?.response_range?.kvs ?? [];
  const find = (key: Buffer): EtcdKeyValue | undefined => kvs.find((kv) => kv.key.equals(key));
  return { hold: find(keys.hold), record: find(keys.record), token: find(keys.token) };
}

/** The token an acquire got, or `undefined` when someone else holds the resource. */
export function acquiredToken(
  response: EtcdTxnResponse,
  keys: ResourceKeys,
  owner: string,
  nonce: Buffer,
): number | undefined {
  if (response.succeeded) {
    const prev = response.responses[2]?.response_put?.prev_kv;
    return prev ? safeCount(prev.version, prev.key) + 1 : 1;
  }
  const { hold, token } = readBack(response, keys);
  if (!hold || !token || !token.value.equals(nonce)) return undefined;
  if (!hold.value.equals(Buffer.from(owner, 'utf8'))) return undefined;
  return safeCount(token.version, token.key); // this very call landed on an earlier attempt
}

/**
 * After an acquire that got no token: the record of the live lease that stood in the way, read in
 * the same transaction (its hold key existed then), or `undefined` when the keys do not say.
 */
export function blockingHolder(
  response: EtcdTxnResponse,
  keys: ResourceKeys,
  resource: string,
): LeaseRecord | undefined {
  if (response.succeeded) return undefined;
  const { hold, record, token } = readBack(response, keys);
  return (hold && recordOf(resource, { record, token })) ?? undefined;
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
                value: Buffer.from(lease.owner, 'utf8'),
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

/** Release: if still held by `lease`, deletes the hold key and records owner '' and expiresAt 0. */
export function releaseTxn(keys: ResourceKeys, lease: LeaseRef): EtcdTxnRequest {
  return {
    compare: heldBy(keys, lease),
    success: [
      { request_delete_range: { key: keys.hold } },
      { request_put: { key: keys.record, value: encodeRecord('', 0) } },
    ],
    failure: [],
  };
}
