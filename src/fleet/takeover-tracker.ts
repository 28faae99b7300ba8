import type { LeaseRecord } from '../core/lease.js';
import type { LeaseFacts } from '../client/client-reporter.js';
import type { FleetReporter } from './fleet-reporter.js';

interface PreviousHolder {
  readonly owner: string;
  /** The token of its grant, when the record itself was seen. */
  readonly token: number | undefined;
  /** When its claim lapsed, in ms on the store's time. */
  readonly expiresAt: number;
}

/**
 * Tells which leases a manager takes over from a holder that let them expire, and how long they
 * went unowned. It learns the previous holder of a resource from the records the manager sees
 * (a refused acquire's holder, records read while looking for free resources) and, for resources
 * a dead member was assigned and that the manager takes straight after that member's record
 * expired, from the member's own record, which is renewed in the same batch as its leases.
 */
export class TakeoverTracker {
  private readonly previous = new Map<string, PreviousHolder>();
  /** Members whose membership record expired (died rather than stopped), with its expiry. */
  private expiredMembers = new Map<string, number>();

  constructor(
    private readonly me: string,
    private readonly report: FleetReporter,
  ) {}

  /** A record of a wanted resource, held (or left expired) by someone. */
  seen(record: LeaseRecord): void {
    if (record.owner === '' || record.owner === this.me || record.expiresAt === 0) return;
    const known = this.previous.get(record.resource);
    if (known?.token !== undefined && known.token > record.token) return;
    const { owner, token, expiresAt } = record;
    this.previous.set(record.resource, { owner, token, expiresAt });
  }

  /** The membership records just read that expired without being released. */
  membersExpired(records: readonly LeaseRecord[]): void {
    this.expiredMembers = new Map(
      records.filter((r) => r.owner !== this.me).map((r) => [r.owner, r.expiresAt]),
    );
  }

  /**
   * The membership view changed: the resources `targets` gave to members that died (their
   * record expired) are taken from them, unless a record of the resource was seen.
   */
  membersLeft(targets: ReadonlyMap<string, string>, live: ReadonlySet<string>): void {
    const dead = [...this.expiredMembers.keys()].filter((id) => !live.has(id));
    if (dead.length === 0) return;
    const deadSet = new Set(dead);
    for (const [resource, target] of targets) {
      if (!deadSet.has(target) || this.previous.has(resource)) continue;
      const expiresAt = this.expiredMembers.get(target)!;
      this.previous.set(resource, { owner: target, token: undefined, expiresAt });
    }
  }

  /** The manager was granted `lease`: a takeover when it came after the previous holder's expiry. */
  granted(lease: LeaseFacts): void {
    const previous = this.previous.get(lease.resource);
    if (!previous) return;
    this.previous.delete(lease.resource);
    if (previous.token !== undefined && lease.token <= previous.token) return;
    // Both instants are on the store's time: the new grant's start and the old claim's expiry.
    const latencyMs = lease.expiresAt - lease.ttlMs - previous.expiresAt;
    // Granted before the old claim lapsed: it was released (a handoff), not taken over.
    if (latencyMs < 0) return;
    this.report.takeover(lease, previous.owner, previous.token, latencyMs);
  }

  /** Forgets resources no longer wanted. */
  keepOnly(wanted: ReadonlySet<string>): void {
    for (const resource of this.previous.keys())
      if (!wanted.has(resource)) this.previous.delete(resource);
  }

  clear(): void {
    this.previous.clear();
    this.expiredMembers.clear();
  }
}
