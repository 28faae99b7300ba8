/**
 * Version of the key layout below; stored in the meta key so a change can refuse old data.
 * Version 2 places a name's family (see `placementName`) in one group; version 1 placed every
 * record by its whole name. On one group the two are the same keys, so a one-group namespace
 * keeps the version 1 string.
 */
export const LAYOUT_VERSION = 2;

/**
 * Where one namespace lives. Resources are spread over `shards` hash-tagged groups; a group holds
 * one hash per resource (`owner`, `token`, `expiresAt`) and a sorted set of its resource names:
 *
 *   <prefix>meta                  layout string, e.g. "leasehold-redis/2 shards=16"
 *   <prefix>{<shard>}r:<resource> hash: owner, token, expiresAt (never given a TTL)
 *   <prefix>{<shard>}index        sorted set, score 0, member = resource (byte order)
 *   <prefix>released              pub/sub channel, message = released resource
 *
 * Every key of a group shares the hash tag `{<shard>}`, so each script touches one cluster slot.
 * A resource's group is chosen by its placement name: the resource up to its first U+0001 past its
 * first character, so the permits (`name` U+0001 `permit=i`), fair-line slots and ticket of a name
 * share the name's group, and one script can choose among them on a Redis Cluster. A namespace laid out by version 1
 * (whole names) keeps that placement: see `adopt`.
 */
export class RedisKeys {
  readonly meta: string;
  readonly channel: string;
  private readonly recordPrefixes: readonly string[];
  private readonly indexes: readonly string[];
  /** Whether groups are chosen by placement name (version 2) rather than by the whole name. */
  private byFamily = true;

  constructor(
    readonly prefix: string,
    readonly shards: number,
  ) {
    this.meta = `${prefix}meta`;
    this.channel = `${prefix}released`;
    const groups = Array.from({ length: shards }, (_, shard) => `${prefix}{${shard}}`);
    this.recordPrefixes = groups.map((group) => `${group}r:`);
    this.indexes = groups.map((group) => `${group}index`);
  }

  /** The layout string this store writes to a new namespace. */
  get layout(): string {
    return layoutString(this.shards === 1 || !this.byFamily ? 1 : LAYOUT_VERSION, this.shards);
  }

  /**
   * Takes the layout a namespace is stored with: `true` when this store can use it (its own, or
   * version 1 with the same groups, whose whole-name placement it then keeps, so records written
   * by stores of that version stay where they are and both kinds of store can share the
   * namespace); `false` when it cannot.
   */
  adopt(stored: unknown): boolean {
    if (stored === this.layout) return true;
    if (stored !== layoutString(1, this.shards)) return false;
    this.byFamily = false;
    return true;
  }

  /** The group a resource belongs to: FNV-1a over the UTF-8 bytes of its placement name, so every client agrees. */
  shardOf(resource: string): number {
    if (this.shards === 1) return 0;
    let hash = FNV_OFFSET;
    for (let i = 0; i < resource.length; i++) {
      const unit = resource.charCodeAt(i);
      if (unit === 0x01 && i > 0 && this.byFamily) break; // the end of the placement name
      if (unit >= 0x80) return fnv1a(Buffer.from(this.placementName(resource))) % this.shards; // ASCII is its own UTF-8
      hash = Math.imul(hash ^ unit, FNV_PRIME) >>> 0;
    }
    return hash % this.shards;
  }

  /** What a resource's group is chosen by (see the class comment). */
  placementName(resource: string): string {
    const mark = this.byFamily ? resource.indexOf('\u0001', 1) : -1;
    return mark > 0 ? resource.slice(0, mark) : resource;
  }

  /** Prefix of the record keys of a group: the record key is this plus the resource. */
  recordPrefix(shard: number): string {
    return this.recordPrefixes[shard]!;
  }

  record(resource: string): string {
    return this.recordPrefixes[this.shardOf(resource)]! + resource;
  }

  index(shard: number): string {
    return this.indexes[shard]!;
  }
}

function layoutString(version: number, shards: number): string {
  return `leasehold-redis/${version} shards=${shards}`;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** 32-bit FNV-1a. */
export function fnv1a(bytes: Uint8Array): number {
  let hash = FNV_OFFSET;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, FNV_PRIME) >>> 0;
  return hash;
}
