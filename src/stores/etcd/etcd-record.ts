import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { LeaseRecord } from '../../core/lease.js';
import {
  decodeDataBytes,
  encodeDataBytes,
  withData,
  type LeaseData,
} from '../../core/lease-data.js';
import {
  invalidRecord,
  recordExpiresAt,
  recordOwner,
  recordToken,
} from '../../core/record-check.js';
import type { EtcdKeyValue } from './etcd-driver.js';

/*
 * The record codec: what each of a resource's keys holds (see etcd-keys.ts for the layout), how
 * the keys read together are its record, and the checks that refuse keys leasehold would not
 * leave behind.
 *
 * Lease data is the value of a data key, in core's binary form: a type byte, then the value in
 * etcd's own bytes; no data is an empty value (or no key).
 */

/**
 * The value a data key holds for `data`; `null` is the empty value. The key is never deleted, so
 * its mod revision only grows (see `DataRevisions`). No key at all also reads as no data (a
 * resource never given any).
 */
export function encodeEtcdData(data: LeaseData | null): Buffer {
  return data === null ? NO_DATA : encodeDataBytes(data);
}

/** The value of a data key whose data was cleared. */
const NO_DATA = Buffer.alloc(0);

/** The lease data a data key's value stands for; a value in no known form is a foreign key. */
export function decodeEtcdData(value: Buffer, key: Buffer): LeaseData | null {
  if (value.length === 0) return null;
  const data = decodeDataBytes(value);
  if (data !== undefined) return data;
  throw new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `etcd key ${JSON.stringify(key.toString('utf8'))} holds no lease data in leasehold's form: is the key prefix used by something else?`,
    { retryable: false },
  );
}

/** What the record key holds. */
export interface StoredRecord {
  readonly owner: string;
  readonly expiresAt: number;
}

/** The characters of a nonce at the start of a token key's value (see `Nonces`). */
export const NONCE_LENGTH = 32;

/** The bare nonce, in bytes, that the earlier layout's token keys hold. */
const EARLIER_NONCE_BYTES = 16;

/** `{"owner":…,"expiresAt":…}`, as JSON (`expiresAt` is an integer). */
function recordJson(owner: string, expiresAt: number): string {
  return `{"owner":${JSON.stringify(owner)},"expiresAt":${expiresAt}}`;
}

/** What a renewal writes to the record key. */
export function encodeRecord(owner: string, expiresAt: number): Buffer {
  return Buffer.from(recordJson(owner, expiresAt), 'utf8');
}

/** What an acquire writes to the token key: its nonce (ASCII), then the record it makes. */
export function encodeToken(nonce: string, owner: string, expiresAt: number): Buffer {
  return Buffer.from(nonce + recordJson(owner, expiresAt), 'utf8');
}

/** Whether the token key was last written by the acquire that used `nonce`. */
export function writtenWith(token: EtcdKeyValue, nonce: string): boolean {
  const { value } = token;
  return value.length > NONCE_LENGTH && value.toString('latin1', 0, NONCE_LENGTH) === nonce;
}

/** How many owners' UTF-8 bytes `ownerBytes` keeps; when full, it starts over. */
const CACHED_OWNERS = 256;
const owners = new Map<string, Buffer>();

/**
 * `owner` in UTF-8, kept for the next call by the same owner (a process has few), in memory of
 * its own, like `EtcdKeys.cached`. Never written to.
 */
export function ownerBytes(owner: string): Buffer {
  let bytes = owners.get(owner);
  if (!bytes) {
    if (owners.size >= CACHED_OWNERS) owners.clear();
    bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(owner, 'utf8'));
    bytes.write(owner, 0, 'utf8');
    owners.set(owner, bytes);
  }
  return bytes;
}

/** The empty value of a released hold key. */
export const RELEASED = Buffer.alloc(0);

/**
 * `{"owner","expiresAt"}` from a record or token key's value; `what` names the key in a refusal.
 * Anything else (not JSON, a missing or mistyped field, an owner over `LIMITS.ownerMaxBytes`, an
 * expiresAt that is not whole non-negative ms) is `RECORD_INVALID` for `resource`.
 */
function decodeJson(bytes: Buffer, resource: string, what: string): StoredRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw invalidRecord(resource, `the ${what} key's value is not JSON text`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw invalidRecord(resource, `the ${what} key's value is not a JSON object`);
  const { owner, expiresAt } = parsed as Record<string, unknown>;
  if (typeof expiresAt === 'string') throw invalidRecord(resource, 'expiresAt is a string');
  return { owner: recordOwner(resource, owner), expiresAt: recordExpiresAt(resource, expiresAt) };
}

/** The record a record key holds (`RECORD_INVALID` for `resource` when it is not one). */
export function decodeRecord(kv: EtcdKeyValue, resource: string): StoredRecord {
  return decodeJson(kv.value, resource, 'record');
}

/** The record a token key's acquire made; `undefined` for a bare nonce (the earlier layout). */
function tokenRecord(kv: EtcdKeyValue, resource: string): StoredRecord | undefined {
  if (kv.value.length === EARLIER_NONCE_BYTES) return undefined;
  if (kv.value.length <= NONCE_LENGTH)
    throw invalidRecord(resource, `the token key's value is ${kv.value.length} bytes, too short`);
  return decodeJson(kv.value.subarray(NONCE_LENGTH), resource, 'token');
}

/**
 * Checks a token key as an acquire found it (its `prev_kv`): its version a token, its value the
 * nonce and record an acquire writes (or the earlier layout's bare nonce). `RECORD_INVALID` else.
 */
export function checkTokenKey(kv: EtcdKeyValue, resource: string): void {
  recordToken(resource, kv.version);
  tokenRecord(kv, resource);
}

/** A version (or any int64 etcd counter) as a safe integer; beyond 2^53 − 1 is refused, never rounded. */
export function safeCount(value: string, key: Buffer): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `etcd key ${JSON.stringify(key.toString('utf8'))} has version ${value}, beyond the safe integer range of fencing tokens`,
      { retryable: false },
    );
  }
  return n;
}

/** Whether revision `a` comes after revision `b` (int64 decimal strings, without rounding). */
export function after(a: string, b: string): boolean {
  return a.length !== b.length ? a.length > b.length : a > b;
}

/** One resource's keys, by kind, as a range read returned them. */
export interface ResourceKvs {
  data?: EtcdKeyValue;
  hold?: EtcdKeyValue;
  record?: EtcdKeyValue;
  token?: EtcdKeyValue;
}

/**
 * The record of one resource from the keys a range read returned for it; `null` if never acquired.
 * Keys leasehold would not leave behind are `RECORD_INVALID`: a hold, record or data key without
 * its token key (deleted by hand: the next grant would start the tokens again), a hold key that
 * names an owner on no etcd lease or an owner over `LIMITS.ownerMaxBytes`, a record or token key
 * whose value is not the record (see `decodeJson`).
 */
export function recordOf(resource: string, kvs: ResourceKvs): LeaseRecord | null {
  const { hold, record, token } = kvs;
  if (!token) {
    if (hold || record || kvs.data)
      throw invalidRecord(resource, 'its token key is missing beside its other keys');
    return null;
  }
  const n = recordToken(resource, token.version);
  if (hold && hold.value.length > 0) {
    recordOwner(resource, hold.value.toString('utf8'));
    if (hold.lease === '0')
      throw invalidRecord(resource, 'its hold key names an owner but is on no etcd lease');
  }
  const data = kvs.data && decodeEtcdData(kvs.data.value, kvs.data.key);
  const acquired = tokenRecord(token, resource); // checked also when released
  if (hold && hold.value.length === 0)
    return withData({ resource, owner: '', token: n, expiresAt: 0 }, data);
  const latest =
    acquired && (!record || after(token.mod_revision, record.mod_revision))
      ? acquired
      : record && decodeRecord(record, resource);
  if (!latest) throw invalidRecord(resource, 'its record key is missing');
  return withData({ resource, owner: latest.owner, token: n, expiresAt: latest.expiresAt }, data);
}
