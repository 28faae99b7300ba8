import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { LeaseRecord } from '../../core/lease.js';
import { withData } from '../../core/lease-data.js';
import {
  invalidRecord,
  recordExpiresAt,
  recordOwner,
  recordToken,
} from '../../core/record-check.js';
import { decodeEtcdData } from './etcd-data.js';
import type { EtcdKeyValue } from './etcd-driver.js';

/**
 * The key layout. Each resource has up to four keys, `<prefix><resource>\0<kind>`:
 *
 * - `h` hold: its value is the owner while the lease is held, and it is attached to the holder's
 *   etcd lease, so etcd deletes it when that lease lapses. A release empties it and detaches it
 *   from every etcd lease. An acquire needs it on no etcd lease (absent or released): a held one
 *   is always on one, since every write while held (acquire, renewal) names the owner's lease.
 * - `t` token: written by every acquire and by nothing else, never deleted: its etcd `version`
 *   (the count of writes to it) is the fencing token. Its value is the acquire's nonce (32 ASCII
 *   characters) followed by the record the acquire made, `{"owner","expiresAt"}`.
 * - `r` record: `{"owner","expiresAt"}` as last written by a renewal; never attached to a lease.
 * - `d` data: the lease data (see etcd-data.ts), present only while the record has some. Written
 *   only by `writeData` and by a renewal or release carrying data, under the holder's compares;
 *   never attached to a lease, so it outlives release and expiry. Every grant reads it in its own
 *   transaction; a renewal without data neither writes nor sends it. (Records written before lease
 *   data existed have no data key: they read as records without data.)
 *
 * The record of a resource is therefore: released when the hold key is empty; else the later of
 * what the token key and the record key hold (by `mod_revision`), which outlives an expiry. (An
 * earlier layout wrote the record key on every acquire and release, and deleted the hold key on
 * release; what it left behind reads the same: its token keys hold a bare nonce, and its released
 * resources have a blank record written after their token.)
 *
 * A resource never contains NUL, so `\0` ends the name: keys sort by resource in code-point
 * (= UTF-8 byte) order, and one range `[<prefix><resource>\0, <prefix><resource>\x01)` reads
 * all four at one revision.
 */
export const KIND = Object.freeze({ data: 0x64, hold: 0x68, record: 0x72, token: 0x74 });
export type Kind = (typeof KIND)[keyof typeof KIND];

export interface ResourceKeys {
  readonly data: Buffer;
  readonly hold: Buffer;
  readonly record: Buffer;
  readonly token: Buffer;
  /** `[start, end)` holds all four (see `EtcdKeys.resource`). */
  readonly start: Buffer;
  readonly end: Buffer;
}

/** How many resources' keys `EtcdKeys.cached` keeps; when full, it starts over. */
const CACHED_RESOURCES = 1024;

export class EtcdKeys {
  readonly prefix: Buffer;
  private readonly recent = new Map<string, ResourceKeys>();

  constructor(prefix: string) {
    this.prefix = Buffer.from(prefix, 'utf8');
  }

  /** The keys of `resource`: six views of one buffer, which the name is encoded into once. */
  of(resource: string): ResourceKeys {
    return this.build(resource, Buffer.allocUnsafe);
  }

  /**
   * `of(resource)` kept for the next single-lease call on the same resource (renewals and
   * re-acquisitions come back to the same keys), each in memory of its own, so a kept key pins
   * no part of Node's shared buffer pool. The keys are never written to once built.
   */
  cached(resource: string): ResourceKeys {
    let keys = this.recent.get(resource);
    if (!keys) {
      if (this.recent.size >= CACHED_RESOURCES) this.recent.clear();
      keys = this.build(resource, Buffer.allocUnsafeSlow);
      this.recent.set(resource, keys);
    }
    return keys;
  }

  private build(resource: string, allocate: (size: number) => Buffer): ResourceKeys {
    const size = this.prefix.length + Buffer.byteLength(resource, 'utf8') + 2;
    const all = allocate(size * 6);
    this.prefix.copy(all, 0);
    all.write(resource, this.prefix.length, 'utf8');
    all[size - 2] = 0;
    for (let i = 1; i < 6; i++) all.copy(all, i * size, 0, size - 1);
    const key = (i: number, kind: Kind): Buffer => {
      all[i * size + size - 1] = kind;
      return all.subarray(i * size, (i + 1) * size);
    };
    all[6 * size - 2] = 1;
    return {
      hold: key(0, KIND.hold),
      record: key(1, KIND.record),
      token: key(2, KIND.token),
      data: key(3, KIND.data),
      start: all.subarray(4 * size, 5 * size - 1),
      end: all.subarray(5 * size, 6 * size - 1),
    };
  }

  /**
   * `[start, end)` holding every key of `resource`. `end` is also where the keys of the resources
   * sorting after `resource` begin: a name that extends `resource` continues with a byte above NUL.
   */
  resource(resource: string): { start: Buffer; end: Buffer } {
    const start = Buffer.concat([this.prefix, Buffer.from(resource, 'utf8'), Buffer.from([0])]);
    const end = Buffer.from(start);
    end[end.length - 1] = 1;
    return { start, end };
  }

  /** `[start, end)` holding every key of every resource that starts with `namePrefix`. */
  names(namePrefix: string): { start: Buffer; end: Buffer } {
    const start = Buffer.concat([this.prefix, Buffer.from(namePrefix, 'utf8')]);
    return { start, end: bytesAfterPrefix(start) };
  }

  /** The resource and kind of one of our keys; `undefined` for a key this layout never writes. */
  parse(key: Buffer): { resource: string; kind: number } | undefined {
    const n = key.length;
    if (n < this.prefix.length + 3 || key[n - 2] !== 0) return undefined;
    if (!key.subarray(0, this.prefix.length).equals(this.prefix)) return undefined;
    return { resource: key.toString('utf8', this.prefix.length, n - 2), kind: key[n - 1]! };
  }
}

/** The first key after every key that starts with `prefix` (etcd's own prefix-range rule). */
export function bytesAfterPrefix(prefix: Buffer): Buffer {
  let n = prefix.length;
  while (n > 0 && prefix[n - 1] === 0xff) n--;
  if (n === 0) return Buffer.from([0]); // "to the end of the keyspace"
  const end = Buffer.from(prefix.subarray(0, n));
  end[n - 1]!++;
  return end;
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
function after(a: string, b: string): boolean {
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
