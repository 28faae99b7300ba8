import { liveUntil, type LeaseRecord } from '../core/lease.js';
import type { Clock, TimerHandle } from '../core/time.js';

/** What the timers need to know of the manager: its lease timing and its estimate of the store's clock. */
export interface ExpiryTiming {
  readonly ttlMs: number;
  readonly heartbeatMs: number;
  /** The clock disagreement a contender allows, plus the store's expiry lag. */
  readonly graceMs: number;
  /** The store's time now, as this worker estimates it. */
  storeNow(): number;
}

/**
 * One timer per record that is not being renewed (another worker's lease, or a member's record),
 * firing just after it expires by the store's clock as estimated here: a member's record expiring
 * takes it out of the view; a resource's makes it free to take. A record a healthy holder renews
 * never gets one (it expires at least `ttl − 1.5 heartbeats` ahead), so most records cost nothing.
 */
export class ExpiryTimers {
  private readonly timers = new Map<string, TimerHandle>();
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly timing: ExpiryTiming,
    /** Called when the record of `resource` expired (`member`: a membership record). */
    private readonly expired: (resource: string, member: boolean) => void,
  ) {}

  /** Arms a timer for each member record, other than `self`, that is not being renewed. */
  armMembers(records: readonly LeaseRecord[], self: string): void {
    for (const record of records)
      if (record.owner !== self && this.expiresSoon(record)) this.arm(record, true);
  }

  /** A resource someone else holds: if its record is not being renewed, try again when it expires. */
  armTakeover(record: LeaseRecord): void {
    if (this.expiresSoon(record)) this.arm(record, false);
  }

  /** Clears every timer (`stop`: for good; else until the next `arm`). */
  clear(stop = false): void {
    this.stopped ||= stop;
    for (const timer of this.timers.values()) timer.clear();
    this.timers.clear();
  }

  /** Records that are not being renewed expire before a healthy holder's would (≥ ttl − heartbeat ahead). */
  private expiresSoon(record: LeaseRecord): boolean {
    const horizon = this.timing.ttlMs - this.timing.heartbeatMs * 1.5;
    return record.owner !== '' && record.expiresAt < this.timing.storeNow() + horizon;
  }

  private arm(record: LeaseRecord, member: boolean): void {
    if (this.stopped || this.timers.has(record.resource)) return;
    const jitter = Math.random() * Math.min(50, this.timing.heartbeatMs / 10);
    const at = liveUntil(record, this.timing.graceMs);
    let delay = at - this.timing.storeNow() + 1;
    if (delay <= 0) {
      // Expired by our reckoning already: a member is out of the view by now; a resource the
      // store still refused (our estimate of its clock is off) is tried again a little later.
      if (member) return;
      delay = this.timing.heartbeatMs / 4;
    }
    const timer = this.clock.setTimeout(() => {
      this.timers.delete(record.resource);
      this.expired(record.resource, member);
    }, delay + jitter);
    this.timers.set(record.resource, timer);
  }
}
