import { ErrorCode, LeaseError } from '../../core/errors.js';
import { driftMs, validUntil } from '../../core/time.js';
import { isLeaseNotFound } from './etcd-errors.js';
import { Nonces } from './etcd-nonce.js';
import type { EtcdRpc } from './etcd-rpc.js';

/** An etcd lease this store granted for one owner and TTL. */
export interface OwnerLease {
  readonly id: string;
  /**
   * What etcd granted, in ms: whole seconds with headroom over the TTL it serves (see
   * `ownerLeaseSeconds`), raised by the server to its minimum.
   */
  readonly ttlMs: number;
  /** Monotonic time the grant was sent: the lease serves new work for one `ttlMs` after it. */
  readonly grantedAt: number;
  /**
   * Monotonic time the latest grant or keep-alive that found the lease alive was sent: etcd
   * restarted its countdown after receiving it, so it keeps the lease until `refreshedAt + ttlMs`
   * at the earliest (unless someone revokes it).
   */
  refreshedAt: number;
}

interface Entry {
  readonly promise: Promise<OwnerLease>;
  lease?: OwnerLease;
}

/** How often at most the map is swept of leases nobody has used for a whole TTL. */
const SWEEP_EVERY_MS = 10_000;

/**
 * The headroom an owner lease has over the TTL it serves, at least: after each grant or
 * keep-alive, acquires attach hold keys to it without a keep-alive of their own for about this
 * long (see `covers`), and an unrenewed hold key outlives its `expiresAt` by at most this much
 * plus the rounding to whole seconds (see `EtcdStore.expiryLagMs`).
 */
export const HEADROOM_MS = 500;

/** The TTL, in whole seconds, of an owner lease serving leases of `ttlMs`. */
export function ownerLeaseSeconds(ttlMs: number): number {
  return Math.ceil((ttlMs + HEADROOM_MS) / 1000);
}

/**
 * Whether `lease`, as last refreshed, outlasts every holder's belief in a hold key put on it by a
 * request for `ttlMs` sent at `since`. The holder took its own start before that request, and
 * believes until `validUntil(start, ttlMs)` at most (design rule 2); etcd drops the lease its own
 * TTL (`lease.ttlMs`) after its last refresh, by etcd's clock, which this machine, by the same
 * rule, trusts until `validUntil(refreshedAt, lease.ttlMs)` (so a clock running slow against
 * etcd's is allowed for over the whole of the lease's TTL, not only the acquire's).
 */
export function covers(lease: OwnerLease, ttlMs: number, since: number): boolean {
  return lease.refreshedAt >= refreshedNoEarlier(lease, ttlMs, since);
}

/**
 * How late a grant or keep-alive of `lease` must have been sent to cover a hold requested at
 * `since` for `ttlMs` (see `covers`): `validUntil(refreshedAt, lease.ttlMs)` reaches
 * `validUntil(since, ttlMs)` from this moment on: before `since`, by about the lease's headroom.
 */
export function refreshedNoEarlier(lease: OwnerLease, ttlMs: number, since: number): number {
  return validUntil(since, ttlMs, 0) - (lease.ttlMs - driftMs(lease.ttlMs));
}

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
 *
 * Each lease remembers when it was last refreshed, so an acquire can tell whether the lease as it
 * stands outlasts the new hold (`covers`) and needs no keep-alive of its own (`attach`), while a
 * renewal always has the lease kept alive after it began (`live`).
 */
export class OwnerLeases {
  private readonly current = new Map<string, Entry>();
  /** Keep-alives in flight, by etcd lease id, with the monotonic time each was sent. */
  private readonly keeping = new Map<string, { sentAt: number; alive: Promise<boolean> }>();
  private readonly nonces = new Nonces();
  private lastSweep = performance.now();

  constructor(private readonly rpc: EtcdRpc) {}

  /** The current lease for `owner` and `ttlMs` when it is granted and still serves new work. */
  ready(owner: string, ttlMs: number): OwnerLease | undefined {
    const lease = this.current.get(`${ttlMs}:${owner}`)?.lease;
    return lease && performance.now() - lease.grantedAt < lease.ttlMs ? lease : undefined;
  }

  /** The lease for `owner` and `ttlMs`: the current one, or a fresh one once it served one TTL. */
  async pick(owner: string, ttlMs: number): Promise<OwnerLease> {
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
      const lease = entry.lease ?? (await entry.promise);
      if (performance.now() - lease.grantedAt < lease.ttlMs) return lease;
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
   * Keeps `lease` alive with a keep-alive sent at `notBefore` or later; `false` when etcd no
   * longer has it (it lapsed or was revoked). Calls that start while such a keep-alive is in
   * flight share it, so a burst of calls by one owner costs one keep-alive, not one each.
   */
  keepAlive(lease: OwnerLease, notBefore: number): Promise<boolean> {
    const pending = this.keeping.get(lease.id);
    if (pending && pending.sentAt >= notBefore) return pending.alive;
    const sentAt = performance.now();
    const alive = this.rpc.keepAlive(lease.id).then((seconds) => {
      // etcd answers with the lease's whole TTL when it renewed it, and 0 when it is gone.
      const renewed = seconds * 1000 >= lease.ttlMs;
      if (renewed && sentAt > lease.refreshedAt) lease.refreshedAt = sentAt;
      return renewed;
    });
    const entry = { sentAt, alive };
    this.keeping.set(lease.id, entry);
    const forget = (): void => {
      if (this.keeping.get(lease.id) === entry) this.keeping.delete(lease.id);
    };
    alive.then(forget, forget);
    return alive;
  }

  /** The owner's etcd lease for `ttlMs`, kept alive after `since` (or granted after it). */
  async live(owner: string, ttlMs: number, since: number): Promise<OwnerLease> {
    for (;;) {
      const lease = this.ready(owner, ttlMs) ?? (await this.pick(owner, ttlMs));
      if (lease.refreshedAt >= since) return lease;
      let alive: boolean;
      try {
        alive = await this.keepAlive(lease, since);
      } catch (error) {
        this.drop(owner, ttlMs, lease);
        throw error;
      }
      if (alive) return lease;
      this.drop(owner, ttlMs, lease); // it lapsed: the next pick grants a fresh one
    }
  }

  /**
   * Sends `txn` with the owner's etcd lease for `ttlMs` and the `expiresAt` it gives. When that
   * lease, as last granted or kept alive, would not outlast the new holds (`covers`), a keep-alive
   * goes alongside: etcd then keeps it one lease TTL from about now. If etcd had let the lease
   * lapse or someone revoked it (the keep-alive finds it gone, or a put names it in vain: etcd
   * refuses a put on a lease it no longer has), every key put on it went with it, so the whole
   * call is made once more on a fresh lease; twice in a row is an error, never a grant.
   */
  async attach<R>(
    operation: string,
    owner: string,
    ttlMs: number,
    txn: (leaseId: string, expiresAt: number, nonce: string) => Promise<R>,
  ): Promise<{ answer: R; expiresAt: number; nonce: string }> {
    for (let attempt = 1; ; attempt++) {
      const since = performance.now();
      const sentAt = Date.now();
      const lease = this.ready(owner, ttlMs) ?? (await this.pick(owner, ttlMs));
      const nonce = this.nonces.next();
      const expiresAt = sentAt + ttlMs;
      let failure: unknown;
      let lapsed: boolean;
      if (covers(lease, ttlMs, since)) {
        try {
          return { answer: await txn(lease.id, expiresAt, nonce), expiresAt, nonce };
        } catch (error) {
          failure = error;
          lapsed = isLeaseNotFound(error);
        }
      } else {
        const [sent, alive] = await Promise.allSettled([
          txn(lease.id, expiresAt, nonce),
          this.keepAlive(lease, refreshedNoEarlier(lease, ttlMs, since)),
        ]);
        if (sent.status === 'fulfilled' && alive.status === 'fulfilled' && alive.value) {
          return { answer: sent.value, expiresAt, nonce };
        }
        failure = sent.status === 'rejected' ? sent.reason : undefined;
        lapsed = failure === undefined ? alive.status === 'fulfilled' : isLeaseNotFound(failure);
        if (alive.status === 'rejected') failure ??= alive.reason;
      }
      // Hold keys may now sit on this lease with no one to renew them: stop keeping it alive.
      this.drop(owner, ttlMs, lease);
      // etcd revoked the lease, and with it any key just put on it: once more on a fresh one.
      if (lapsed && attempt === 1) continue;
      throw failure ?? lapsedTwice(operation);
    }
  }

  private grant(ttlMs: number): Entry {
    const grantedAt = performance.now();
    const entry: Entry = {
      promise: this.rpc.grant(ownerLeaseSeconds(ttlMs)).then((granted) => {
        const lease = {
          id: granted.ID,
          ttlMs: Number(granted.TTL) * 1000,
          grantedAt,
          refreshedAt: grantedAt,
        };
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

function lapsedTwice(operation: string): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `etcd ${operation} failed: the etcd lease lapsed as it was used, twice`,
  );
}
