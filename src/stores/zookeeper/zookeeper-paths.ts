/**
 * The znode layout under the store's path `C` (its chroot option):
 *
 * - `C/clock`: written (unconditionally) only to read the leader's clock: the `mtime` of a write
 *   is the leader's wall-clock time of that transaction.
 * - `C/r/<name>`: one persistent record znode per resource; its data is `{"o":owner,"t":ttlMs}`
 *   as written by the last acquire, renew or release (`{"o":"","t":0}` once released), and its
 *   `mtime` is when that happened on the leader's clock, so `expiresAt = mtime + t`.
 * - `C/r/<name>/t`: the token znode, written by every acquire and by nothing else, never deleted:
 *   its data `version` (the count of writes to it) is the fencing token.
 * - `C/r/<name>/h`: the hold znode, ephemeral: it exists while the lease is held and belongs to
 *   the holder's ZooKeeper session, so the server deletes it when that session expires.
 * - `C/r/<name>/t/d`: the data znode, persistent, a child of the token znode: the lease data (see
 *   zookeeper-record.ts), present only while the record has some. Written only by `writeData` and
 *   by a renewal or release carrying data, in the same `multi` as their checks; never by a grant
 *   or a renewal without data. The token znode's `numChildren` (1 or 0), in the stat every grant
 *   and every read of the token znode gets anyway, tells whether there is data to read. (Records
 *   written before lease data existed have no data znode: they read as records without data.)
 *
 * `<name>` is the resource with `%`, `/` and every character ZooKeeper refuses in a znode name
 * (controls, U+D800–U+F8FF, U+FFF0–U+FFFF, and every character beyond U+FFFF, which Java
 * holds as a surrogate pair) percent-encoded as UTF-8
 * bytes; a name of `.` or `..` has its dots encoded too. Every other character stays as it is.
 */
export class ZkPaths {
  readonly clock: string;
  readonly records: string;
  /** Recently used resources' paths: the same strings again, so maps keyed by them hash them once. */
  private readonly recent = new Map<string, ResourcePaths>();

  constructor(readonly chroot: string) {
    this.clock = `${chroot}/clock`;
    this.records = `${chroot}/r`;
  }

  /** The znodes of `resource`. */
  of(resource: string): ResourcePaths {
    let paths = this.recent.get(resource);
    if (paths) return paths;
    if (this.recent.size >= RECENT_RESOURCES) this.recent.clear();
    const record = `${this.records}/${encodeName(resource)}`;
    paths = Object.freeze({
      resource,
      record,
      token: `${record}/t`,
      hold: `${record}/h`,
      data: `${record}/t/d`,
    });
    this.recent.set(resource, paths);
    return paths;
  }
}

/** How many resources' paths `ZkPaths.of` keeps; when full, it starts over. */
const RECENT_RESOURCES = 1024;

export interface ResourcePaths {
  readonly resource: string;
  readonly record: string;
  readonly token: string;
  readonly hold: string;
  readonly data: string;
}

/** Whether ZooKeeper refuses a character, by code point, in a znode name (Java's UTF-16 rules). */
export function refusedInName(point: number): boolean {
  return (
    point <= 0x1f ||
    (point >= 0x7f && point <= 0x9f) ||
    (point >= 0xd800 && point <= 0xf8ff) ||
    point >= 0xfff0
  );
}

function mustEncode(char: string): boolean {
  return char === '%' || char === '/' || refusedInName(char.codePointAt(0)!);
}

/** The znode name of a resource (see `ZkPaths`). */
export function encodeName(resource: string): string {
  if (resource === '.' || resource === '..') return resource.replaceAll('.', '%2E');
  let out = '';
  for (const char of resource) {
    if (!mustEncode(char)) {
      out += char;
      continue;
    }
    for (const byte of Buffer.from(char, 'utf8')) {
      out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return out;
}

/** The resource a znode name stands for, or `undefined` for a name this layout never writes. */
export function decodeName(name: string): string | undefined {
  try {
    const resource = decodeURIComponent(name);
    return encodeName(resource) === name ? resource : undefined;
  } catch {
    return undefined;
  }
}
