import type { EtcdRpc } from './etcd-rpc.js';

/** An etcd lease this store granted for one owner and TTL. */
export interface OwnerLease {
  readonly id: string;
  /** What etcd granted, in ms: the TTL rounded up to whole seconds, raised to the server's minimum. */
  readonly ttlMs: number;
  /** Monotonic time the grant was sent: etcd's countdown started after it. */
  readonly grantedAt: number;
}

interface Entry {
  readonly promise: Promise<OwnerLease>;
  lease?: OwnerLease;
}

/** How often at most the map is swept of leases nobody has used for a whole TTL. */
const SWEEP_EVERY_MS = 10_000;

/**
 * One etcd lease per owner and TTL, shared by every key that owner holds with that TTL: one
 * keep-alive renews them all. Each lease serves new acquires and renewals for one TTL only; then
 * the next operation of that owner grants a fresh lease and renewals move their keys onto it.
 *
 * That rotation is what makes a key lapse once its own holder stops renewing it, even while the
 * same owner keeps renewing others: a key its holder dropped without a successful release (lost
 * by deadline, a release or acquire whose answer never came) stays on an old lease that no one
 * keeps alive any more, instead of riding on the owner's keep-alives for as long as the process
 * lives. Its lease is kept alive for at most one more TTL after the key was last written, so it
 * lapses within about two TTLs; a lease used by a failed call is dropped at once (never kept alive
 * again), since that call's key may sit on it with no holder.
 */
export class OwnerLeases {
  private readonly current = new Map<string, Entry>();
  /** Keep-alives in flight, by etcd lease id, with the monotonic time each was sent. */
  private readonly keeping = new Map<string, { sentAt: number; alive: Promise<boolean> }>();
  private lastSweep = performance.now();

  constructor(private readonly rpc: EtcdRpc) {}

  /**
   * The lease for `owner` and `ttlMs`. `fresh` when it was granted after `since` (the caller's
   * start), so its countdown began after the caller's: it needs no keep-alive to cover `since + ttl`.
   */
  async pick(
    owner: string,
    ttlMs: number,
    since: number,
  ): Promise<{ lease: OwnerLease; fresh: boolean }> {
    const key = `${ttlMs}:${owner}`;
    this.sweep();
    for (;;) {
      let entry = this.current.get(key);
      if (!entry) {
        entry = this.grant(ttlMs);
        this.current.set(key, entry);
        const settled = entry;
        settled.promise.catch(() => {
          if (this.current.get(key) === settled) this.current.delete(key);
        });
      }
      const lease = await entry.promise;
      if (performance.now() - lease.grantedAt < lease.ttlMs) {
        return { lease, fresh: lease.grantedAt >= since };
      }
      if (this.current.get(key) === entry) this.current.delete(key); // served a whole TTL: rotate
    }
  }

  /** Stops using `lease` for new work: after a failed call its keys' fate is unknown. */
  drop(owner: string, ttlMs: number, lease: OwnerLease): void {
    const key = `${ttlMs}:${owner}`;
    if (this.current.get(key)?.lease === lease) this.current.delete(key);
  }

  /** Stops using every lease of `owner` for new work (a release failed: its key may be on any). */
  dropOwner(owner: string): void {
    for (const key of this.current.keys()) {
      if (key.slice(key.indexOf(':') + 1) === owner) this.current.delete(key);
    }
  }

  /**
   * Keeps `lease` alive with a keep-alive sent after `since`; `false` when etcd no longer has it
   * (it lapsed). Calls that start while such a keep-alive is in flight share it, so a burst of
   * acquires by one owner costs one keep-alive, not one each.
   */
  keepAlive(lease: OwnerLease, since: number): Promise<boolean> {
    const pending = this.keeping.get(lease.id);
    if (pending && pending.sentAt >= since) return pending.alive;
    const sentAt = performance.now();
    const alive = this.rpc.keepAlive(lease.id).then((ttl) => ttl > 0);
    const entry = { sentAt, alive };
    this.keeping.set(lease.id, entry);
    const forget = (): void => {
      if (this.keeping.get(lease.id) === entry) this.keeping.delete(lease.id);
    };
    alive.then(forget, forget);
    return alive;
  }

  private grant(ttlMs: number): Entry {
    const grantedAt = performance.now();
    const entry: Entry = {
      promise: this.rpc.grant(Math.ceil(ttlMs / 1000)).then((granted) => {
        const lease = { id: granted.ID, ttlMs: Number(granted.TTL) * 1000, grantedAt };
        entry.lease = lease;
        return lease;
      }),
    };
    return entry;
  }

  private sweep(): void {
    const now = performance.now();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    for (const [key, entry] of this.current) {
      if (entry.lease && now - entry.lease.grantedAt >= entry.lease.ttlMs) this.current.delete(key);
    }
  }
}
