import { invalidArgument } from '../../core/errors.js';

/** S3's limit on an object key, in UTF-8 bytes. */
export const KEY_MAX_BYTES = 1024;

/** Code points up to `/` are written `!` + two hex digits; `!` itself is one of them. */
const HIGHEST_ESCAPED = 0x2f;
const ESCAPE = /![0-9a-f]{2}/y;

/**
 * The object key part for a resource. Characters up to `/` (controls, space, `!"#$%&'()*+,-./`)
 * become `!` and two lowercase hex digits; every other character stays as it is. `!` sorts below
 * every character kept and hex digits sort like the numbers they write, so the code is
 * order-preserving and prefix-free: keys sort (in S3's UTF-8 byte order) exactly as resources do
 * in code-point order, and `encodeResource(p)` is a prefix of `encodeResource(r)` exactly when `p`
 * is a prefix of `r`. An encoded resource has no `/` (no "folders", no `.` or `..` path segment)
 * and never starts with `.`, which leaves keys starting with `.` free for the probe.
 */
export function encodeResource(resource: string): string {
  let out = '';
  for (const char of resource) {
    const point = char.codePointAt(0)!;
    out += point <= HIGHEST_ESCAPED ? `!${point.toString(16).padStart(2, '0')}` : char;
  }
  return out;
}

/** The resource an encoded key part names, or `undefined` when no resource encodes to it. */
export function decodeResource(encoded: string): string | undefined {
  let out = '';
  let i = 0;
  while (i < encoded.length) {
    const point = encoded.codePointAt(i)!;
    if (point === 0x21) {
      ESCAPE.lastIndex = i;
      if (!ESCAPE.test(encoded)) return undefined;
      const escaped = parseInt(encoded.slice(i + 1, i + 3), 16);
      if (escaped > HIGHEST_ESCAPED) return undefined;
      out += String.fromCodePoint(escaped);
      i += 3;
    } else if (point <= HIGHEST_ESCAPED) {
      return undefined;
    } else {
      const char = String.fromCodePoint(point);
      out += char;
      i += char.length;
    }
  }
  return out === '' ? undefined : out;
}

/** Where a store's objects live: `prefix` + encoded resource, in one bucket. */
export class KeySpace {
  constructor(
    readonly bucket: string,
    readonly prefix: string,
  ) {}

  /** The object key of a resource; a resource whose key would pass S3's limit is refused. */
  keyOf(resource: string, field = 'resource'): string {
    const key = this.prefix + encodeResource(resource);
    const bytes = Buffer.byteLength(key, 'utf8');
    if (bytes > KEY_MAX_BYTES)
      throw invalidArgument(
        field,
        `makes an S3 key of ${bytes} bytes, over S3's ${KEY_MAX_BYTES} (characters up to "/" take 3 bytes each in a key)`,
      );
    return key;
  }

  /** The key prefix that lists every resource starting with `prefix` (may pass S3's limit: then nothing matches). */
  listPrefix(prefix: string): string {
    return this.prefix + encodeResource(prefix);
  }

  /** The resource an object key names, or `undefined` for a key that is not a lease record. */
  resourceOf(key: string): string | undefined {
    if (!key.startsWith(this.prefix)) return undefined;
    return decodeResource(key.slice(this.prefix.length));
  }

  /** A key for one run of the start-up probe: never the key of a resource (they never start with `.`). */
  probeKey(id: string): string {
    return `${this.prefix}.leasehold-probe-${id}`;
  }
}
