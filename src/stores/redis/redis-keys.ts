/** Version of the key layout below; stored in the meta key so a future change can refuse old data. */
export const LAYOUT_VERSION = 1;

/**
 * Where one namespace lives. Resources are spread over `shards` hash-tagged groups; a group holds
 * one hash per resource (`owner`, `token`, `expiresAt`) and a sorted set of its resource names:
 *
 *   <prefix>meta                  layout string, e.g. "leasehold-redis/1 shards=16"
 *   <prefix>{<shard>}r:<resource> hash: owner, token, expiresAt (never given a TTL)
 *   <prefix>{<shard>}index        sorted set, score 0, member = resource (byte order)
 *   <prefix>released              pub/sub channel, message = released resource
 *
 * Every key of a group shares the hash tag `{<shard>}`, so each script touches one cluster slot.
 */
export class RedisKeys {
  readonly meta: string;
  readonly channel: string;
  readonly layout: string;
  private readonly recordPrefixes: readonly string[];
  private readonly indexes: readonly string[];

  constructor(
    readonly prefix: string,
    readonly shards: number,
  ) {
    this.meta = `${prefix}meta`;
    this.channel = `${prefix}released`;
    this.layout = `leasehold-redis/${LAYOUT_VERSION} shards=${shards}`;
    const groups = Array.from({ length: shards }, (_, shard) => `${prefix}{${shard}}`);
    this.recordPrefixes = groups.map((group) => `${group}r:`);
    this.indexes = groups.map((group) => `${group}index`);
  }

  /** The group a resource belongs to: FNV-1a over its UTF-8 bytes, so every client agrees. */
  shardOf(resource: string): number {
    if (this.shards === 1) return 0;
    let hash = FNV_OFFSET;
    for (let i = 0; i < resource.length; i++) {
      const unit = resource.charCodeAt(i);
      if (unit >= 0x80) return fnv1a(Buffer.from(resource, 'utf8')) % this.shards; // ASCII is its own UTF-8
      hash = Math.imul(hash ^ unit, FNV_PRIME) >>> 0;
    }
    return hash % this.shards;
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

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** 32-bit FNV-1a. */
export function fnv1a(bytes: Uint8Array): number {
  let hash = FNV_OFFSET;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, FNV_PRIME) >>> 0;
  return hash;
}
