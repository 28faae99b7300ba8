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
 * - `d` data: the lease data (see etcd-record.ts), present only while the record has some. Written
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
 * What each key's value holds, and how a resource's keys read as its record, is etcd-record.ts.
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
