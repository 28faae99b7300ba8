import type { Clock, TimerHandle } from '../core/time.js';
import { hashName, weight } from './assign.js';

/**
 * Ranks past this one share its turn: in a large fleet with few short workers, a resource whose
 * assigned member is full waits at most this many steps for whoever is short, not one per member.
 */
const MAX_RANK = 4;

/**
 * Free resources assigned to another member that this worker, short of its share, would take in
 * that member's stead. Told at once (a release or an expiry is announced to every worker), every
 * short worker used to try every one of them: after a crash on etcd, seven survivors made 250–1,231
 * refused attempts each in a traced run, their last takes 14.8–23.6 s after the kill. Instead the
 * others wait their turn in the resource's own rendezvous order: the assigned member at once (not
 * here: it is its own), the next-ranked one after `stepMs`, the one after that after two steps, and
 * so on up to `MAX_RANK` steps; one that sees the resource taken meanwhile (`taken`) forgets it. A
 * resource whose assigned member is full is so taken by a short worker within `MAX_RANK` steps,
 * mostly by one worker at a time.
 *
 * Advice only, as all assignment is (design rule 7): it orders who tries, and the store's
 * compare-and-set decides who holds.
 */
export class Fallbacks {
  private readonly timers = new Map<string, TimerHandle>();

  constructor(
    private readonly clock: Clock,
    private readonly stepMs: number,
  ) {}

  /**
   * This worker's turn for `resource`: its rank among `members` other than `target` (the
   * assigned member), by rendezvous weight, times `stepMs`; 0 for the first of them, and ranks
   * past `MAX_RANK` at `MAX_RANK` steps.
   */
  delayFor(
    resource: string,
    me: string,
    members: readonly string[],
    target: string | undefined,
  ): number {
    const h = hashName(resource);
    const mine = weight(h, hashName(me));
    let rank = 0;
    for (const id of members) {
      if (id === me || id === target) continue;
      const w = weight(h, hashName(id));
      if (w > mine || (w === mine && id < me)) rank++;
    }
    return Math.min(rank, MAX_RANK) * this.stepMs;
  }

  /** Runs `take` after `delayMs`, unless `taken(resource)` comes first. One wait per resource. */
  defer(resource: string, delayMs: number, take: () => void): void {
    if (this.timers.has(resource)) return;
    const timer = this.clock.setTimeout(() => {
      this.timers.delete(resource);
      take();
    }, delayMs);
    this.timers.set(resource, timer);
  }

  /** `resource` was taken (by anyone): its wait ends without a try. */
  taken(resource: string): void {
    this.timers.get(resource)?.clear();
    this.timers.delete(resource);
  }

  /** How many resources wait their turn. */
  get size(): number {
    return this.timers.size;
  }

  /** Ends every wait (the manager stops). */
  clear(): void {
    for (const timer of this.timers.values()) timer.clear();
    this.timers.clear();
  }
}
