/**
 * The last write this store made to a record it still holds: what the next renew compares with,
 * and what that revision holds (a write conditioned on it rewrites the value whole).
 */
export interface KnownWrite {
  readonly owner: string;
  readonly token: number;
  readonly nonce: string;
  /** Moved on in place by each renewal of the grant (see `advance`). */
  revision: number;
  /** The `expiresAt` written at `revision`. */
  expiresAt: number;
  /** The lease data at `revision`, in `encodeData`'s form (`null`: none). */
  readonly data: string | null;
}

/**
 * What a release left (ours, or one the watch saw): the token and data the next grant starts from,
 * at `revision`.
 */
export interface ReleasedWrite {
  readonly token: number;
  readonly revision: number;
  readonly data: string | null;
}

/** An acquire whose answer never came: conditioned on `base`, it may land later or already has. */
interface Unsure {
  readonly nonce: string;
  readonly base: number;
}

/**
 * Past this many records, the cache of known revisions starts again (it only saves round trips):
 * well above the 100,000 leases a worker may hold, about 100 bytes each.
 */
const MAX_KNOWN = 1_000_000;

/**
 * What the watch's notes of releases may hold (see `noteReleased`): at most this many, of at most
 * `MAX_WATCHED_BYTES` of names and data in all, the oldest dropped first. A record with more data
 * than `MAX_WATCHED_DATA` is not noted: its next acquire reads first, as without a watch.
 */
const MAX_WATCHED = 100_000;
const MAX_WATCHED_BYTES = 16 * 2 ** 20;
const MAX_WATCHED_DATA = 1024;

/** What one note costs, about: the name and data (UTF-16 code units as bytes) and the entry. */
const noteBytes = (resource: string, released: ReleasedWrite): number =>
  resource.length + (released.data?.length ?? 0) + 64;

/**
 * What this store remembers of its own writes, per resource. Neither is ever trusted without the
 * server: a known revision is only the condition of the next write (a stale one fails it, and the
 * record is read again), and an unsure acquire is adopted only when a read shows its nonce.
 */
export class OwnWrites {
  private readonly known = new Map<string, KnownWrite>();
  private readonly unsure = new Map<string, Unsure[]>();
  private readonly released = new Map<string, ReleasedWrite>();
  /** Releases the watch saw (`noteReleased`), oldest first, and what they hold. */
  private readonly seen = new Map<string, ReleasedWrite>();
  private seenBytes = 0;

  /** Our release of `resource` landed at `revision`, leaving `token`: the next acquire may skip its read. */
  rememberReleased(resource: string, released: ReleasedWrite): void {
    if (this.released.size >= MAX_KNOWN && !this.released.has(resource)) this.released.clear();
    this.released.set(resource, released);
  }

  /**
   * A release anyone made, as the store's watch saw it: noted apart from our own, unless a note of
   * a later revision is there, within `MAX_WATCHED` notes and `MAX_WATCHED_BYTES` (the oldest go
   * first). Only the condition of one write, as our own note is.
   */
  noteReleased(resource: string, released: ReleasedWrite): void {
    const noted = this.released.get(resource) ?? this.seen.get(resource);
    if (noted && noted.revision >= released.revision) return;
    if ((released.data?.length ?? 0) > MAX_WATCHED_DATA) return;
    this.dropSeen(resource);
    const bytes = noteBytes(resource, released);
    for (const oldest of this.seen.keys()) {
      if (this.seen.size < MAX_WATCHED && this.seenBytes + bytes <= MAX_WATCHED_BYTES) break;
      this.dropSeen(oldest);
    }
    this.seen.set(resource, released);
    this.seenBytes += bytes;
  }

  /** The record was written at `revision` by a grant (as the watch saw it): a note before it is stale. */
  takenAt(resource: string, revision: number): void {
    if ((this.released.get(resource)?.revision ?? Infinity) < revision)
      this.released.delete(resource);
    if ((this.seen.get(resource)?.revision ?? Infinity) < revision) this.dropSeen(resource);
  }

  /** The watch stopped: what it noted can no longer be kept current, so it goes. */
  forgetSeen(): void {
    this.seen.clear();
    this.seenBytes = 0;
  }

  private dropSeen(resource: string): void {
    const noted = this.seen.get(resource);
    if (!noted) return;
    this.seen.delete(resource);
    this.seenBytes -= noteBytes(resource, noted);
  }

  /**
   * The record as the last release we know of left it, ours or one the watch saw (taken: used
   * once). Only the condition of one write: if anyone wrote the key since, that write fails and
   * the record is read.
   */
  takeReleased(resource: string): ReleasedWrite | undefined {
    const own = this.released.get(resource);
    const seen = this.seen.get(resource);
    this.released.delete(resource);
    this.dropSeen(resource);
    // Both may be there (our release, then the watch's copy of it or of a later one): the later.
    return own && seen ? (seen.revision > own.revision ? seen : own) : (own ?? seen);
  }

  /** The revision of our last write of this grant, if we made one and nothing said it moved. */
  knownFor(resource: string, owner: string, token: number): KnownWrite | undefined {
    const known = this.known.get(resource);
    return known && known.owner === owner && known.token === token ? known : undefined;
  }

  /**
   * Our renewal conditioned on `known` (still this grant, same nonce and data) landed at `revision`
   * with `expiresAt`. Moves the remembered write on in place when it is still `known`, so a
   * renewal allocates nothing here.
   */
  advance(resource: string, known: KnownWrite, revision: number, expiresAt: number): void {
    if (this.known.get(resource) === known) {
      known.revision = revision;
      known.expiresAt = expiresAt;
    } else this.remember(resource, { ...known, revision, expiresAt });
  }

  remember(resource: string, write: KnownWrite): void {
    if (this.known.size >= MAX_KNOWN && !this.known.has(resource)) this.known.clear();
    this.known.set(resource, write);
  }

  forget(resource: string): void {
    this.known.delete(resource);
  }

  /** Forgets our last write if it is still the one at `revision`, which the record moved past. */
  forgetStale(resource: string, revision: number): void {
    if (this.known.get(resource)?.revision === revision) this.known.delete(resource);
  }

  /** Forgets our last write unless it is still the record's current revision `revision`. */
  forgetBefore(resource: string, revision: number | undefined): void {
    if (this.known.get(resource)?.revision !== revision) this.known.delete(resource);
  }

  /** Notes an acquire about to be sent, conditioned on revision `base`. */
  sending(resource: string, nonce: string, base: number): void {
    const list = this.unsure.get(resource) ?? [];
    list.push({ nonce, base });
    this.unsure.set(resource, list);
  }

  /** The acquire with `nonce` was answered (granted or refused): its outcome is known. */
  answered(resource: string, nonce: string): void {
    const list = this.unsure.get(resource)?.filter((u) => u.nonce !== nonce);
    if (list?.length) this.unsure.set(resource, list);
    else this.unsure.delete(resource);
  }

  /** Whether the record read at `revision` with `nonce` is the work of an unanswered acquire of ours. */
  isOurs(resource: string, nonce: string): boolean {
    return this.unsure.get(resource)?.some((u) => u.nonce === nonce) ?? false;
  }

  /**
   * Forgets unanswered acquires that can no longer land: the record was read at `revision`, past
   * the revision they were conditioned on, and does not hold their nonce.
   */
  settle(resource: string, revision: number, nonce: string | undefined): void {
    const list = this.unsure.get(resource);
    if (!list) return;
    const open = list.filter((u) => u.nonce !== nonce && u.base >= revision);
    if (open.length) this.unsure.set(resource, open);
    else this.unsure.delete(resource);
  }

  /** Every unanswered acquire of `resource` is resolved. */
  resolved(resource: string): void {
    this.unsure.delete(resource);
  }
}
