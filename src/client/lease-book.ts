import { ErrorCode, LeaseError } from '../core/errors.js';
import type { Lease } from '../core/lease.js';
import { validUntil } from '../core/time.js';
import { HeldLease, type LeaseKeeper } from './held-lease.js';
import type { Heartbeat } from './heartbeat.js';

/** What `LeaseBook` needs of the client it keeps leases for. */
export interface LeaseBookOptions {
  /** Renews every adopted lease and watches its deadline. */
  readonly heartbeat: Heartbeat;
  /** What every `HeldLease` granted here calls back into. */
  readonly keeper: LeaseKeeper;
  /** The clock disagreement, in ms, subtracted from each lease's local deadline. */
  readonly maxClockSkewMs: number;
  /** Tells of a grant once it is kept (the reporter and the client's `acquired` event). */
  readonly acquired: (held: HeldLease) => void;
}

/**
 * The leases one client holds, by store record: a grant becomes a `HeldLease` here (`grant`), is
 * kept alive and then told of (`adopt`), and is forgotten when it ends (`forget`).
 */
export class LeaseBook {
  private readonly leases = new Map<string, HeldLease>();

  constructor(private readonly options: LeaseBookOptions) {}

  /** The lease held on record `key`, if any. */
  get(key: string): HeldLease | undefined {
    return this.leases.get(key);
  }

  /** Whether a lease on record `key` is held. */
  has(key: string): boolean {
    return this.leases.has(key);
  }

  /** How many leases are held. */
  get size(): number {
    return this.leases.size;
  }

  /** Starts keeping granted leases (heartbeat, lookup by record), then tells of each grant. */
  adopt(granted: readonly HeldLease[]): void {
    for (const held of granted) {
      this.leases.set(held.key, held);
      this.options.heartbeat.add(held);
    }
    for (const held of granted) this.options.acquired(held);
  }

  /** A handle on a granted lease, valid until its deadline measured from `tSent` (design rule 2). */
  grant(lease: Lease, tSent: number): HeldLease {
    const deadline = validUntil(tSent, lease.ttlMs, this.options.maxClockSkewMs);
    return HeldLease.grant(lease, deadline, tSent, this.options.keeper);
  }

  /** Stops keeping a lease that was lost or released: no more renewals, no lookup. */
  forget(held: HeldLease): void {
    this.options.heartbeat.end(held);
    if (this.leases.get(held.key) === held) this.leases.delete(held.key);
  }

  assertNotHeld(resource: string): void {
    const held = this.leases.get(resource);
    if (!held) return;
    if (held.key !== held.resource)
      throw new LeaseError(
        ErrorCode.INVALID_ARGUMENT,
        `resource ${JSON.stringify(resource)} is the record of permit ${held.permit} of ${JSON.stringify(held.resource)}, held by this client`,
        { resource },
      );
    throw new LeaseError(
      ErrorCode.INVALID_ARGUMENT,
      `resource ${JSON.stringify(resource)} is already held by this client`,
      { resource },
    );
  }
}
