import type { Clock } from '../core/time.js';

/** Announced-free resources remembered at most (see `freed`). */
const FREED_MAX = 100_000;

/**
 * What a reconciling worker remembers "for a scan", measured in the scan period scans actually run
 * (`scanMs`) on the monotonic clock: resources refused lately (not asked again for most of a scan),
 * resources the store announced free that the worker did not take then (tried, when short, before a
 * search of every record), free resources left for others because they did not fit (taken once they
 * stayed free for half a scan), and the waits before a search of every record: after the members
 * grew (the others shed for a scan first) and after the last search (at most one per scan).
 */
export class HoldOffs {
  /** When each resource was last refused. */
  private readonly refusedAt = new Map<string, number>();
  /**
   * Resources the store announced free (released or expired) that this worker did not take then,
   * with when. A joining worker hears what the others shed for it before it has a share of its own.
   */
  private readonly freedAt = new Map<string, number>();
  /** Free resources left for others because they did not fit, with when first. */
  private readonly freeSince = new Map<string, number>();
  /** Resources this worker handed over for balance lately, with when. */
  private readonly givenAt = new Map<string, number>();
  /** When the view last gained a member (whose share others then shed to it). */
  private grewAt = -Infinity;
  private searchedAt = -Infinity;

  constructor(
    private readonly clock: Clock,
    /** The scan period, in ms. */
    private readonly scanMs: number,
    /**
     * Whether the store announces releases: a resource handed over is then taken at once by the
     * member it goes to, and left to it for half a scan; without announcements that member finds it
     * at its next search, most of a scan after it joined, and it is left to it for a scan and a half.
     */
    private readonly announced = true,
  ) {}

  /** `resource` was refused now: not asked for again for most of a scan. */
  refused(resource: string): void {
    this.refusedAt.set(resource, this.clock.monotonic());
  }

  /** Whether `resource` was refused within most of a scan before the last `forgetRefusals`. */
  isRefused(resource: string): boolean {
    return this.refusedAt.has(resource);
  }

  /** Forgets refusals older than most of a scan before `now`. */
  forgetRefusals(now: number): void {
    const recent = this.recent(now);
    for (const [resource, at] of this.refusedAt) if (at < recent) this.refusedAt.delete(resource);
  }

  /**
   * `resource` was handed over for balance now: though assigned to this worker, it is left for the
   * member it was handed to for a while (`justGave`), then taken back should it still be free.
   */
  gave(resource: string): void {
    this.givenAt.set(resource, this.clock.monotonic());
  }

  /** Whether `resource` was handed over for balance lately (see `announced`). */
  justGave(resource: string, now: number): boolean {
    const at = this.givenAt.get(resource);
    return at !== undefined && now - at < this.leaveFor();
  }

  private leaveFor(): number {
    return this.announced ? this.scanMs / 2 : 1.5 * this.scanMs;
  }

  /** The store announced `resource` free and this worker did not take it: remembered for a scan. */
  freed(resource: string): void {
    if (this.freedAt.size < FREED_MAX) this.freedAt.set(resource, this.clock.monotonic());
  }

  /** `resource` was taken again (by anyone): no longer worth trying as announced free. */
  takenAgain(resource: string): void {
    this.freedAt.delete(resource);
  }

  /** Whether any announced-free resource is remembered. */
  hasFreed(): boolean {
    return this.freedAt.size > 0;
  }

  /** The announced-free resources remembered, forgotten as they are handed out. */
  takeFreed(): string[] {
    const freed = [...this.freedAt.keys()];
    this.freedAt.clear();
    return freed;
  }

  /**
   * Forgets announced-free resources older than most of a scan before `now`, and resources left
   * free for others that are now `held` here or were first left more than four scans ago.
   */
  forgetStale(now: number, held: ReadonlyMap<string, unknown>): void {
    const recent = this.recent(now);
    for (const [resource, at] of this.freedAt) if (at < recent) this.freedAt.delete(resource);
    for (const [resource, at] of this.givenAt)
      if (now - at >= this.leaveFor()) this.givenAt.delete(resource);
    for (const [resource, at] of this.freeSince)
      if (at < now - 4 * this.scanMs || held.has(resource)) this.freeSince.delete(resource);
  }

  /**
   * A free resource that does not fit this worker: whether it has been left free since at least
   * half a scan before `now` (take it then). Remembers it from `now` when it is new.
   */
  leftFreeLong(resource: string, now: number): boolean {
    const since = this.freeSince.get(resource);
    if (since !== undefined && now - since >= this.scanMs / 2) return true;
    if (since === undefined) this.freeSince.set(resource, now);
    return false;
  }

  /**
   * The shares were dealt afresh: unless members only left (nobody sheds then, every share rises),
   * a search of every record waits for a scan while the others shed to whoever joined.
   */
  dealt(onlyLeft: boolean): void {
    this.grewAt = onlyLeft ? -Infinity : this.clock.monotonic();
  }

  /** Whether a search of every record may run at `now`: no join, nor search, within most of a scan. */
  maySearch(now: number): boolean {
    const recent = this.recent(now);
    return this.grewAt < recent && this.searchedAt < recent;
  }

  /** A search of every record ran at `now`. */
  searched(now: number): void {
    this.searchedAt = now;
  }

  /** The last search found free records that others took first: the next may run at once. */
  searchAgain(): void {
    this.searchedAt = -Infinity;
  }

  /** What counts as within the last scan at `now`: most of a scan period (timers are jittered). */
  private recent(now: number): number {
    return now - 0.8 * this.scanMs;
  }
}
