import { ErrorCode, LeaseError } from '../core/errors.js';
import { isLive, type Lease, type LeaseRecord } from '../core/lease.js';
import { permitMatcher } from '../core/permits.js';
import { QUEUE_MARK, TICKET_MARK } from '../core/record-marks.js';
import { rotated } from '../core/store-defaults.js';
import type { LeaseStore } from '../core/store.js';
import { sleep, validUntil, type Clock } from '../core/time.js';
import type { HeldLease } from './held-lease.js';
import { ReleaseWake, type Wake } from './release-wake.js';

/**
 * The places in one name's line: a waiter holds one of these records as a lease of its own while
 * it waits, so a waiter that dies leaves the line when that lease lapses.
 */
export const FAIR_SLOTS = 256;
export { QUEUE_MARK, TICKET_MARK };

export interface FairLineOptions {
  readonly store: LeaseStore;
  readonly clock: Clock;
  readonly owner: string;
  readonly ttlMs: number;
  readonly heartbeatMs: number;
  readonly maxClockSkewMs: number;
  /** The name waited for. */
  readonly name: string;
  /** Its permits (1 for an exclusive lease). */
  readonly permits: number;
}

type Attempt = () => Promise<HeldLease | 'held-by-other' | 'too-late'>;

/** A place held in the line: the slot's lease, its ticket, and when it must be renewed by. */
interface Place {
  lease: Lease;
  readonly ticket: number;
  /** Local monotonic deadline of the slot lease (design rule 2). */
  validUntil: number;
  renewedAt: number;
}

/**
 * Fair waiting on one name, built from ordinary leases so it works on every store.
 *
 * Arrival: the waiter takes the name's ticket record (an exclusive lease; its fencing token, which
 * rises with every grant, is the waiter's ticket), takes a free slot of the line with the ticket
 * written into the slot lease's owner, and only then gives the ticket back — so whoever reads the
 * line sees every earlier ticket already in it. Waiting: the waiter renews its slot on its own
 * heartbeat and reads the line; the live slot with the lowest ticket is the head. Only the head
 * tries the lease (one store call; a release of the name wakes only it), and leaves the line when
 * granted. Every other waiter sleeps until its predecessor's slot is released (watched on stores
 * that announce releases) or could have lapsed (its TTL: a dead waiter is skipped within it).
 *
 * The line is advice, as fleet assignment is (design rule 7): the lease is still granted only by
 * the store's compare-and-set. A plain (non-fair) `tryAcquire` or `acquire` does not queue and may
 * take the lease ahead of the line, as a fair lock's `tryLock` may.
 */
export class FairLine {
  private readonly ticketKey: string;
  private readonly queuePrefix: string;
  private storeOffset = 0;

  constructor(private readonly o: FairLineOptions) {
    this.ticketKey = o.name + TICKET_MARK;
    this.queuePrefix = o.name + QUEUE_MARK;
  }

  /** Waits in line, then returns what `attempt` granted; gives the place up however it ends. */
  async wait(
    waitMs: number,
    signal: AbortSignal | undefined,
    attempt: Attempt,
    giveBack: (held: HeldLease) => Promise<void>,
  ): Promise<HeldLease> {
    const { clock } = this.o;
    const deadline = clock.monotonic() + waitMs;
    let place: Place | undefined;
    const wakes = new Map<string, Wake>();
    const wakeFor = (key: string, matches?: (r: string) => boolean): Wake => {
      let wake = wakes.get(key);
      if (!wake) wakes.set(key, (wake = ReleaseWake.for(this.o.store, key, matches)));
      return wake;
    };
    try {
      for (;;) {
        signal?.throwIfAborted();
        if (clock.monotonic() >= deadline) throw this.unavailable(waitMs);
        place ??= await this.enter(deadline, signal);
        if (!place) throw this.unavailable(waitMs);
        if (!(await this.keep(place))) {
          place = undefined; // lapsed (a frozen loop, a store outage): back of the line
          continue;
        }
        const ahead = await this.ahead(place);
        const pause = Math.max(
          1,
          Math.min(
            deadline - clock.monotonic(),
            place.renewedAt + this.o.heartbeatMs - clock.monotonic(),
          ),
        );
        if (ahead === undefined) {
          const outcome = await attempt();
          if (typeof outcome !== 'string') {
            if (signal?.aborted) {
              await giveBack(outcome);
              signal.throwIfAborted();
            }
            return outcome;
          }
          await wakeFor(this.o.name, permitMatcher(this.o.name, this.o.permits)).sleep(
            clock,
            Math.min(pause, this.backoff()),
            signal,
          );
        } else {
          // Until the predecessor leaves: its release is announced, or it lapses unrenewed.
          const lapse = Math.max(1, this.localUntil(ahead) - clock.monotonic());
          await wakeFor(ahead.resource).sleep(clock, Math.min(pause, lapse), signal);
        }
      }
    } finally {
      for (const wake of wakes.values()) wake.close();
      if (place) await this.leave(place);
    }
  }

  /** Takes a ticket and a slot; `undefined` when the wait ran out first. */
  private async enter(
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<Place | undefined> {
    const { store, clock, owner, ttlMs, maxClockSkewMs } = this.o;
    for (let attempt = 0; clock.monotonic() < deadline; attempt++) {
      signal?.throwIfAborted();
      const tTicket = clock.monotonic();
      const ticket = await store.tryAcquire(this.ticketKey, owner, ttlMs);
      if (ticket) {
        try {
          const slots = rotated(Array.from({ length: FAIR_SLOTS }, (_, i) => this.slotKey(i)));
          const tSent = clock.monotonic();
          const slot = await store.acquireFirst(slots, slotOwner(ticket.token, owner), ttlMs);
          // A ticket that lapsed before the slot was taken may have let a later arrival in ahead:
          // such a place would jump the line, so it is given back and the arrival made again.
          if (slot && clock.monotonic() >= validUntil(tTicket, ttlMs, maxClockSkewMs)) {
            await store.release(slot).catch(() => false);
          } else if (slot) {
            this.observe(slot);
            return {
              lease: slot,
              ticket: ticket.token,
              validUntil: validUntil(tSent, ttlMs, maxClockSkewMs),
              renewedAt: tSent,
            };
          }
        } finally {
          await store.release(ticket).catch(() => false); // else it lapses at its TTL
        }
      }
      // Another arrival holds the ticket for one round trip, or the line is full: try again soon.
      const delay = Math.min(deadline - clock.monotonic(), 5 * 2 ** Math.min(attempt, 6));
      if (delay > 0) await sleep(clock, Math.round(delay * (0.5 + Math.random() * 0.5)), signal);
    }
    return undefined;
  }

  /** Renews the slot when a heartbeat is due; false when the place is gone. */
  private async keep(place: Place): Promise<boolean> {
    const { store, clock, ttlMs, maxClockSkewMs, heartbeatMs } = this.o;
    const now = clock.monotonic();
    if (now >= place.validUntil) return false;
    if (now - place.renewedAt < heartbeatMs) return true;
    try {
      const renewed = await store.renew(place.lease, ttlMs);
      if (!renewed) return false;
      place.lease = renewed;
      place.validUntil = Math.max(place.validUntil, validUntil(now, ttlMs, maxClockSkewMs));
      place.renewedAt = now;
      this.observe(renewed);
    } catch {
      // A store error: try again at the next turn, until the slot's own deadline.
    }
    return clock.monotonic() < place.validUntil;
  }

  /** The live waiter just ahead of `place` (the highest lower ticket), or `undefined` at the head. */
  private async ahead(place: Place): Promise<LeaseRecord | undefined> {
    const records = await this.o.store.list({ prefix: this.queuePrefix, limit: FAIR_SLOTS });
    const now = this.storeNow();
    const allowance = this.o.store.maxClockSkewMs + (this.o.store.expiryLagMs ?? 0);
    let best: { record: LeaseRecord; ticket: number } | undefined;
    for (const record of records) {
      if (record.resource === place.lease.resource || !isLive(record, now, allowance)) continue;
      const ticket = ticketOf(record.owner);
      if (ticket === undefined || ticket >= place.ticket) continue;
      if (!best || ticket > best.ticket) best = { record, ticket };
    }
    return best?.record;
  }

  /** Gives the slot back at once (one bounded attempt; else it lapses at its TTL). */
  private async leave(place: Place): Promise<void> {
    await this.o.store.release(place.lease).catch(() => false);
  }

  private slotKey(slot: number): string {
    return `${this.queuePrefix}${String(slot).padStart(3, '0')}`;
  }

  /** When a record seen in the line could have lapsed, on the local monotonic clock. */
  private localUntil(record: LeaseRecord): number {
    const allowance = this.o.store.maxClockSkewMs + (this.o.store.expiryLagMs ?? 0);
    return this.o.clock.monotonic() + (record.expiresAt + allowance - this.storeNow());
  }

  private storeNow(): number {
    return (
      this.o.clock.now() + (this.o.store.capabilities.clock === 'local' ? 0 : this.storeOffset)
    );
  }

  private observe(lease: Lease): void {
    this.storeOffset = lease.expiresAt - lease.ttlMs - this.o.clock.now();
  }

  private backoff(): number {
    return Math.min(1000, Math.max(25, Math.floor(this.o.ttlMs / 4)));
  }

  private unavailable(waitMs: number): LeaseError {
    return new LeaseError(
      ErrorCode.LEASE_UNAVAILABLE,
      `lease on ${JSON.stringify(this.o.name)}${this.o.permits > 1 ? ` (all ${this.o.permits} permits)` : ''} is held by another owner (waited ${waitMs} ms in line)`,
      { resource: this.o.name, retryable: true },
    );
  }
}

/** The owner written into a slot lease: the ticket, padded so owners sort by it, then the waiter. */
export function slotOwner(ticket: number, owner: string): string {
  let prefix = `${String(ticket).padStart(16, '0')}|`;
  // Owners are at most 256 UTF-8 bytes; the waiter's name is only there to be read by people.
  let rest = owner;
  while (Buffer.byteLength(prefix + rest, 'utf8') > 256)
    rest = Array.from(rest).slice(0, -1).join('');
  prefix += rest;
  return prefix;
}

/** The ticket a slot lease's owner carries, or `undefined` for a record no waiter wrote. */
export function ticketOf(owner: string): number | undefined {
  const bar = owner.indexOf('|');
  if (bar !== 16) return undefined;
  const ticket = Number(owner.slice(0, 16));
  return Number.isSafeInteger(ticket) && ticket > 0 ? ticket : undefined;
}
