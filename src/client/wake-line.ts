import type { LeaseStore } from '../core/store.js';
import type { Clock } from '../core/time.js';
import { ReleaseWake, wakeableSleep, type Wake } from './release-wake.js';

/** How long the notice of a release whose waiter was woken ahead is expected (then it is not). */
const AHEAD_MS = 2000;

/**
 * The waiting `acquire()` calls of this process on one name of one store (a resource, or the
 * permits of a name), with one release subscription between them. A release notice wakes one
 * waiter, the one that joined first among those asleep, instead of every waiter (a herd that
 * sends all of them to the store for one free record). A hint only, as `ReleaseWake` is: the
 * compare-and-set decides, and every waiter's own backoff still runs.
 *
 * Nothing is missed between a refused attempt and the next sleep: a notice that finds no waiter
 * asleep is kept as a credit (at most one per waiter) that the next sleep spends at once; a
 * waiter that joins after a notice that came since its refused attempt was sent sleeps not at
 * all; when the subscription goes live every waiter tries once more; and a woken waiter that
 * leaves before trying (aborted, say) passes its wake to the next.
 */
class WakeLine {
  /** Every waiter on the line, in the order they joined. */
  private readonly members: Member[] = [];
  private credits = 0;
  /** `clock.monotonic()` of the last notice. */
  private lastNotice = -Infinity;
  private readonly unwatch: () => void;
  /** Whether the subscription is live: a release sent now will be announced. */
  private live = false;
  /**
   * Releases whose waiter was woken as they were sent (`wakeAhead`), by resource: the time each
   * was sent. Their notice, when it comes, has been acted on already.
   */
  private readonly ahead = new Map<string, number[]>();

  constructor(
    store: LeaseStore,
    prefix: string,
    /** Whether a notice about `resource` concerns this line. */
    readonly matches: (resource: string) => boolean,
    private readonly clock: Clock,
    private readonly onClosed: () => void,
  ) {
    this.unwatch = store.watch!(prefix, (event) => {
      if (event.type === 'acquired' || !this.matches(event.resource)) return;
      this.lastNotice = this.clock.monotonic();
      if (event.type === 'released' && this.spendAhead(event.resource)) return;
      this.wakeOne();
    });
    const ready = (this.unwatch as { ready?: unknown }).ready;
    if (ready instanceof Promise)
      ready.then(
        () => {
          this.live = true;
          for (const m of this.members) m.poke();
        },
        () => {},
      );
    else this.live = true;
  }

  /**
   * A release of `resource` is about to be sent on a store that applies calls in the order they
   * are made: the waiter woken now tries after the release, on the same connection, in the same
   * round trip where the store sends calls together. Its notice is then not acted on again.
   * Returns what to call when the release did not happen (refused or failed), or `undefined`
   * when nobody was asleep to wake.
   */
  wakeAhead(resource: string): (() => void) | undefined {
    if (!this.members.some((m) => m.wake())) return undefined;
    if (!this.live) return () => {};
    const sent = this.clock.monotonic();
    const times = this.ahead.get(resource);
    if (times) times.push(sent);
    else this.ahead.set(resource, [sent]);
    return () => {
      const list = this.ahead.get(resource);
      const at = list?.indexOf(sent) ?? -1;
      if (at >= 0) list!.splice(at, 1);
      if (list?.length === 0) this.ahead.delete(resource);
    };
  }

  /** A notice of a release already acted on (woken ahead, within `AHEAD_MS`): spent, `true`. */
  private spendAhead(resource: string): boolean {
    const times = this.ahead.get(resource);
    if (!times) return false;
    const now = this.clock.monotonic();
    while (times.length > 0 && now - times[0]! > AHEAD_MS) times.shift();
    const spent = times.shift() !== undefined;
    if (times.length === 0) this.ahead.delete(resource);
    return spent;
  }

  /** A waiter whose last refused attempt was sent at `since` (monotonic). */
  join(since: number): Wake {
    const member = new Member(this);
    if (this.lastNotice >= since) member.pending = true;
    this.members.push(member);
    return member;
  }

  /** Whether some waiter is asleep now (no credit waiting to be spent). */
  asleep(): boolean {
    return this.credits === 0 && this.members.some((m) => m.sleeping);
  }

  /** Spends a credit, if any. */
  takeCredit(): boolean {
    if (this.credits === 0) return false;
    this.credits--;
    return true;
  }

  leave(member: Member, passOn: boolean): void {
    const at = this.members.indexOf(member);
    if (at < 0) return;
    this.members.splice(at, 1);
    this.credits = Math.min(this.credits, this.members.length);
    if (passOn) this.wakeOne();
    if (this.members.length === 0) this.close();
  }

  private wakeOne(): void {
    for (const m of this.members) if (m.wake()) return;
    this.credits = Math.min(this.credits + 1, this.members.length);
  }

  /** The last waiter left: the subscription ends with it. */
  private close(): void {
    this.onClosed();
    this.unwatch();
  }
}

/** One waiter on a line. */
class Member implements Wake {
  /** The next sleep ends at once (the subscription went live, or a notice came just before). */
  pending = false;
  /** Woken by a notice and not yet tried again: a wake to pass on if it leaves now. */
  private woken = false;
  private wakeUp: (() => void) | undefined;
  private closed = false;

  constructor(private readonly line: WakeLine) {}

  attempted(): void {
    this.woken = false;
  }

  sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
    if (this.pending || this.line.takeCredit()) {
      this.pending = false;
      return Promise.resolve();
    }
    return wakeableSleep(clock, ms, signal, (wakeUp) => (this.wakeUp = wakeUp));
  }

  get sleeping(): boolean {
    return this.wakeUp !== undefined;
  }

  /** Wakes this waiter if it is asleep. */
  wake(): boolean {
    if (!this.wakeUp) return false;
    this.woken = true;
    this.wakeUp();
    return true;
  }

  poke(): void {
    if (this.wakeUp) this.wakeUp();
    else this.pending = true;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.wakeUp = undefined;
    this.line.leave(this, this.woken);
  }
}

const lines = new WeakMap<LeaseStore, Map<string, WakeLine>>();

/**
 * A waiter's place on the line for `key` (the resource, or the name and its permits) of `store`,
 * made with one subscription to `prefix` filtered by `matches` on first use; the plain backoff
 * when the store cannot announce releases. `since`: when the refused attempt was sent.
 */
export function joinWakeLine(
  store: LeaseStore,
  clock: Clock,
  key: string,
  prefix: string,
  matches: (resource: string) => boolean,
  since: number,
): Wake {
  if (!store.capabilities.watch || typeof store.watch !== 'function')
    return ReleaseWake.for(store, prefix, matches);
  let byKey = lines.get(store);
  if (!byKey) lines.set(store, (byKey = new Map()));
  let line = byKey.get(key);
  if (!line) {
    try {
      const made = new WakeLine(store, prefix, matches, clock, () => {
        if (byKey.get(key) === made) byKey.delete(key);
      });
      line = made;
    } catch {
      return ReleaseWake.for(store, prefix, matches); // refuses to watch now: the backoff alone
    }
    byKey.set(key, line);
  }
  return line.join(since);
}

/**
 * Called just before a release of `resource` is sent on `store`: on a store that applies calls
 * in order (`capabilities.ordered`), wakes the first waiter asleep on a line of this process that
 * the release concerns, so that its attempt follows the release at once instead of a notice
 * later. Returns what to call if the release then did not happen.
 */
export function wakeAhead(store: LeaseStore, resource: string): (() => void) | undefined {
  if (store.capabilities.ordered !== true) return undefined;
  const byKey = lines.get(store);
  if (!byKey) return undefined;
  for (const line of byKey.values()) {
    if (!line.matches(resource)) continue;
    const undo = line.wakeAhead(resource);
    if (undo) return undo;
  }
  return undefined;
}

/** Whether waiters of this process are asleep on the line for `key` of `store`. */
export function lineAsleep(store: LeaseStore, key: string): boolean {
  return lines.get(store)?.get(key)?.asleep() === true;
}
