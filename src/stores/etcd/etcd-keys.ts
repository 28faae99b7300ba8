import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { LeaseRecord } from '../../core/lease.js';
import type { EtcdKeyValue } from './etcd-driver.js';

/**
 * The key layout. Each resource has up to three keys, `<prefix><resource>\0<kind>`:
 *
 * - `h` hold: exists while the lease is held; attached to the holder's etcd lease, so etcd deletes
 *   it when that lease lapses. Its value is the owner.
 * - `r` record: `{"owner","expiresAt"}` as last written by acquire, renew or release; never
 *   attached to a lease, so it outlives an expiry.
 * - `t` token: written by every acquire and by nothing else, never deleted: its etcd `version`
 *   (the count of writes to it) is the fencing token. Its value is the acquire's nonce.
 *
 * A resource never contains NUL, so `\0` ends the name: keys sort by resource in code-point
 * (= UTF-8 byte) order, and one range `[<prefix><resource>\0, <prefix><resource>\x01)` reads
 * all three at one revision.
 */
export const KIND = Object.freeze({ hold: 0x68, record: 0x72, token: 0x74 });
export type Kind = (typeof KIND)[keyof typeof KIND];

export interface ResourceKeys {
  readonly hold: Buffer;
  readonly record: Buffer;
  readonly token: Buffer;
  /** `[start, end)` holds all three (see `EtcdKeys.resource`). */
  readonly start: Buffer;
  readonly end: Buffer;
}

export class EtcdKeys {
  readonly prefix: Buffer;

  constructor(prefix: string) {
    this.prefix = Buffer.from(prefix, 'utf8');
  }

  /** The keys of `resource`: five views of one buffer, which the name is encoded into once. */
  of(resource: string): ResourceKeys {
    const size = this.prefix.length + Buffer.byteLength(resource, 'utf8') + 2;
    const all = Buffer.allocUnsafe(size * 5);
    this.prefix.copy(all, 0);
    all.write(resource, this.prefix.length, 'utf8');
    all[size - 2] = 0;
    for (let i = 1; i < 5; i++) all.copy(all, i * size, 0, size - 1);
    const key = (i: number, kind: Kind): Buffer => {
      all[i * size + size - 1] = kind;
      return all.subarray(i * size, (i + 1) * size);
    };
    all[5 * size - 2] = 1;
    return {
      hold: key(0, KIND.hold),
      record: key(1, KIND.record),
      token: key(2, KIND.token),
      start: all.subarray(3 * size, 4 * size - 1),
      end: all.subarray(4 * size, 5 * size - 1),
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

/** What a release writes, the same every time. */
const RELEASED = Buffer.from(JSON.stringify({ owner: '', expiresAt: 0 }), 'utf8');

/** `JSON.stringify({ owner, expiresAt })`, written out (`expiresAt` is an integer). */
export function encodeRecord(owner: string, expiresAt: number): Buffer {
  if (owner === '' && expiresAt === 0) return RELEASED;
  return Buffer.from(`{"owner":${JSON.stringify(owner)},"expiresAt":${expiresAt}}`, 'utf8');
}

export function decodeRecord(kv: EtcdKeyValue): StoredRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(kv.value.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const { owner, expiresAt } = (parsed ?? {}) as Partial<StoredRecord>;
  if (typeof owner !== 'string' || typeof expiresAt !== 'number') {
    throw foreignKey(kv.key);
  }
  return { owner, expiresAt };
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

/** The record of one resource from the keys a range read returned for it; `null` if never acquired. */
export function recordOf(
  resource: string,
  kvs: { record?: EtcdKeyValue; token?: EtcdKeyValue },
): LeaseRecord | null {
  if (!kvs.token || !kvs.record) return null;
  const { owner, expiresAt } = decodeRecord(kvs.record);
  return { resource, owner, token: safeCount(kvs.token.version, kvs.token.key), expiresAt };
}

function foreignKey(key: Buffer): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `etcd key ${JSON.stringify(key.toString('utf8'))} was not written by leasehold: is the key prefix used by something else?`,
    { retryable: false },
  );
}
