import type { LeaseRef } from '../../core/lease.js';
import type { ZkSession } from './zookeeper-session.js';

/** What this store wrote last for one grant: the record as it left it, and where the hold lives. */
export interface KnownGrant {
  readonly owner: string;
  readonly token: number;
  /** The record znode's version right after this store wrote it for this grant. */
  readonly recordVersion: number;
  /** The session whose ephemeral hold znode this grant is. */
  readonly session: ZkSession;
  /** Local monotonic time until which the holder may believe in the grant. */
  readonly until: number;
  /**
   * Whether the record has a data znode, as this store's last write of the grant left it (absent:
   * not known, taken as none; a wrong guess is refused by the server and read again).
   */
  readonly hasData?: boolean;
}

/** How many remembered grants make `note` forget those nobody can believe in any more. */
const SWEEP_FROM = 1024;

/**
 * The grants this store made or renewed, by hold znode, so that renew and release need no reads.
 * A record znode's version changes with every write, so a `multi` conditioned on the version this
 * store's own write left (and on the hold's existence) applies only if nobody wrote the record
 * since: the record still names the owner and the grant of that write (every grant writes it).
 * What is remembered is never trusted beyond that: a lease this store does not know, or whose
 * record someone else wrote since (another process renewing it, a renewal whose answer was lost),
 * is read first, as any lease is. Forgetting is always safe; it only costs the reads.
 */
export class ZkGrants {
  private readonly byHold = new Map<string, KnownGrant>();
  private sweepAt = SWEEP_FROM;

  /** The grant `lease` names, when it is the one remembered on its hold (same owner and token). */
  of(holdPath: string, lease: LeaseRef): KnownGrant | undefined {
    const known = this.byHold.get(holdPath);
    return known && known.owner === lease.owner && known.token === lease.token ? known : undefined;
  }

  /** Remembers a grant after a write of its record; an older write answered late changes nothing. */
  note(holdPath: string, grant: KnownGrant): void {
    const known = this.byHold.get(holdPath);
    if (
      known &&
      (known.token > grant.token ||
        (known.token === grant.token && known.recordVersion > grant.recordVersion))
    ) {
      return;
    }
    this.byHold.set(holdPath, grant);
    if (this.byHold.size < this.sweepAt) return;
    // Leases lost or dropped without a release stay listed until their holders stop believing.
    const now = performance.now();
    for (const [path, { until }] of this.byHold) if (until <= now) this.byHold.delete(path);
    this.sweepAt = Math.max(SWEEP_FROM, 2 * this.byHold.size);
  }

  /** After a write of the lease data alone: the grant as it was, with or without a data znode. */
  noteData(holdPath: string, lease: LeaseRef, hasData: boolean): void {
    const known = this.of(holdPath, lease);
    if (known) this.byHold.set(holdPath, { ...known, hasData });
  }

  /** Forgets the grant of `token` on `holdPath`: it was released, or found over. */
  forget(holdPath: string, token: number): void {
    if (this.byHold.get(holdPath)?.token === token) this.byHold.delete(holdPath);
  }
}
