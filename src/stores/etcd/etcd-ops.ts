import type { LeaseRecord, LeaseRef } from '../../core/lease.js';
import type { LeaseData } from '../../core/lease-data.js';
import type {
  EtcdCompare,
  EtcdKeyValue,
  EtcdRequestOp,
  EtcdTxnRequest,
  EtcdTxnResponse,
} from './etcd-driver.js';
import type { ResourceKeys } from './etcd-keys.js';
import {
  decodeEtcdData,
  encodeEtcdData,
  encodeRecord,
  encodeToken,
  ownerBytes,
  recordOf,
  RELEASED,
  safeCount,
  writtenWith,
  type ResourceKvs,
} from './etcd-record.js';

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
 * carries the nonce and the new record, and reads the data key: the lease data the new holder
 * gets, at the revision of its grant. On failure it reads the resource's keys back in one range:
 * the record of the lease that stood in the way, and a call the driver retried after it had
 * landed is recognised by its nonce.
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
    success: acquireWrites(keys, owner, leaseId, expiresAt, nonce),
    failure: [{ request_range: { key: keys.start, range_end: keys.end } }],
  };
}

/**
 * What an acquire does once its compare held: the two puts and the read of the data key (the
 * answers, in this order, that `acquiredToken` and `acquiredData` read).
 */
export function acquireWrites(
  keys: ResourceKeys,
  owner: string,
  leaseId: string,
  expiresAt: number,
  nonce: string,
): EtcdRequestOp[] {
  return [
    // prev_kv: what the grant replaced, checked by `overwritten`
    { request_put: { key: keys.hold, value: ownerBytes(owner), lease: leaseId, prev_kv: true } },
    {
      request_put: {
        key: keys.token,
        value: encodeToken(nonce, owner, expiresAt),
        prev_kv: true,
      },
    },
    { request_range: { key: keys.data } },
  ];
}

/** The keys an acquire's failure branch read, by kind. */
function readBack(response: EtcdTxnResponse, keys: ResourceKeys): ResourceKvs {
  const kvs = response.responses[0]?.response_range?.kvs ?? [];
  const find = (key: Buffer): EtcdKeyValue | undefined => kvs.find((kv) => kv.key.equals(key));
  return {
    data: find(keys.data),
    hold: find(keys.hold),
    record: find(keys.record),
    token: find(keys.token),
  };
}

/**
 * The lease data an acquire handed over, and the data key's mod revision, once `acquiredToken`
 * found it granted: what the data key held at the grant (read by the same transaction, or by the read-back of a call that had landed
 * on an earlier attempt: the data key is written only under the new token, not yet returned).
 */
export function acquiredData(
  response: EtcdTxnResponse,
  keys: ResourceKeys,
): { data: LeaseData | null; revision: string } {
  const kv = response.succeeded
    ? response.responses[2]?.response_range?.kvs[0]
    : readBack(response, keys).data;
  // The revision ("0": no data key) is what the new holder's first data write is conditioned on
  // (see `DataRevisions`).
  return kv
    ? { data: decodeEtcdData(kv.value, kv.key), revision: kv.mod_revision }
    : { data: null, revision: '0' };
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

/**
 * The data key is where this store last read or wrote it: at mod revision `expected` ("0": no data
 * key). Every data write carries this compare, so a late copy of an earlier write never lands
 * over a later one (see `DataRevisions`).
 */
function dataAt(keys: ResourceKeys, expected: string): EtcdCompare {
  return { key: keys.data, target: 'Mod', result: 'Equal', mod_revision: expected };
}

/**
 * A transaction that writes lease data: `txn`'s compares and the data key at `expected`; on
 * success its writes, the put of the data key (never deleted: `null` is an empty value, see
 * `encodeEtcdData`) and a read of the data key's new revision (`writtenRevision`); on failure a
 * read of the resource's keys (`dataMoved`).
 */
function withDataWrite(
  txn: EtcdTxnRequest,
  keys: ResourceKeys,
  expected: string,
  data: LeaseData | null,
): EtcdTxnRequest {
  return {
    compare: [...txn.compare, dataAt(keys, expected)],
    success: [
      ...txn.success,
      { request_put: { key: keys.data, value: encodeEtcdData(data) } },
      { request_range: { key: keys.data, keys_only: true } },
    ],
    failure: [{ request_range: { key: keys.start, range_end: keys.end } }],
  };
}

/** `writeData`: if still held by `lease` (renew's compares), writes the data key and nothing else. */
export function writeDataTxn(
  keys: ResourceKeys,
  lease: LeaseRef,
  expected: string,
  data: LeaseData | null,
): EtcdTxnRequest {
  return withDataWrite(
    { compare: heldBy(keys, lease), success: [], failure: [] },
    keys,
    expected,
    data,
  );
}

/** `renewTxn` that also writes the data key, in the same transaction. */
export function renewWithDataTxn(
  keys: ResourceKeys,
  lease: LeaseRef,
  leaseId: string,
  expiresAt: number,
  expected: string,
  data: LeaseData | null,
): EtcdTxnRequest {
  return withDataWrite(renewTxn(keys, lease, leaseId, expiresAt), keys, expected, data);
}

/** `releaseTxn` that also writes the data key, in the same transaction. */
export function releaseWithDataTxn(
  keys: ResourceKeys,
  lease: LeaseRef,
  expected: string,
  data: LeaseData | null,
): EtcdTxnRequest {
  return withDataWrite(releaseTxn(keys, lease), keys, expected, data);
}

/** The data key's mod revision after a data write that succeeded (the read it ends with). */
export function writtenRevision(response: EtcdTxnResponse): string {
  const read = response.responses[response.responses.length - 1]?.response_range;
  return read?.kvs[0]?.mod_revision ?? '0';
}

/**
 * After a data write that failed: the data key's mod revision when `lease` still holds the
 * resource (so what failed was the data compare: another write under this token landed since,
 * maybe a copy of one answered as failed), `undefined` when the lease is gone.
 */
export function dataMoved(
  response: EtcdTxnResponse,
  keys: ResourceKeys,
  lease: LeaseRef,
): string | undefined {
  const { hold, token, data } = readBack(response, keys);
  if (!hold || !token || token.version !== String(lease.token)) return undefined;
  if (!hold.value.equals(ownerBytes(lease.owner))) return undefined;
  return data?.mod_revision ?? '0';
}
