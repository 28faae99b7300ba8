import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { ZkModule } from './zookeeper-driver.js';
import { ZkSession } from './zookeeper-session.js';

/** The session timeout asked for the session that serves reads, probes and `watch`. */
const MAIN_CLASS_MS = sessionClassMs(20_000);

/**
 * The session timeout asked for leases of `ttlMs`: the next power of two of seconds, at least one
 * second. Leases whose TTLs fall in one class share one session.
 */
export function sessionClassMs(ttlMs: number): number {
  return 1000 * 2 ** Math.ceil(Math.log2(Math.max(1, ttlMs / 1000)));
}

/**
 * The store's ZooKeeper sessions: one per class of TTL, made when first needed, and made again
 * after one expired. A hold znode is ephemeral on a session whose granted timeout is at least the
 * lease's TTL: the server expires a session only once it heard nothing from it for that long, and
 * a holder's deadline (design rule 2) comes no later than one TTL after the request it sent last,
 * so a session expiry never ends a lease its holder still believes in.
 */
export class ZkSessions {
  private readonly byClass = new Map<number, Promise<ZkSession>>();
  /** The session of each class once it is open, for the common case: no promise to wait on. */
  private readonly ready = new Map<number, ZkSession>();
  private readonly opened = new Set<ZkSession>();
  private closed = false;
  /** The last TTL asked for and its class: most calls ask for the same TTL again. */
  private lastTtl = 0;
  private lastClassMs = 0;

  constructor(
    private readonly zk: ZkModule,
    private readonly hosts: readonly string[],
    private readonly callTimeoutMs: number,
  ) {}

  /** The session for reads, clock probes and watches. */
  main(): Promise<ZkSession> {
    return this.ofClass(MAIN_CLASS_MS);
  }

  /**
   * The session that holds leases of `ttlMs`. Refused with `INVALID_ARGUMENT` when the server
   * grants sessions shorter than `ttlMs` (its `maxSessionTimeout`): the server could then expire
   * the session, and end the lease, while its holder still counts on it.
   */
  async forTtl(ttlMs: number): Promise<ZkSession> {
    if (ttlMs !== this.lastTtl) {
      this.lastTtl = ttlMs;
      this.lastClassMs = sessionClassMs(ttlMs);
    }
    const session = await this.ofClass(this.lastClassMs);
    if (session.timeoutMs < ttlMs) {
      throw new LeaseError(
        ErrorCode.INVALID_ARGUMENT,
        `ttlMs ${ttlMs} is longer than the ${session.timeoutMs} ms session timeout this ZooKeeper ` +
          `server grants at most: raise its maxSessionTimeout, or use a TTL up to ${session.timeoutMs} ms`,
      );
    }
    return session;
  }

  /** The usable session that `owner` (a znode's `ephemeralOwner`) names, if it is one of the store's. */
  byOwner(owner: Buffer): ZkSession | undefined {
    for (const session of this.opened) if (session.usable && session.owns(owner)) return session;
    return undefined;
  }

  /** Forgets a hold on every session: it was released. */
  untrack(holdPath: string): void {
    for (const session of this.opened) session.untrack(holdPath);
  }

  /** Closes every session (see `ZkSession.close`); later calls are refused. */
  async close(): Promise<void> {
    this.closed = true;
    const all = await Promise.allSettled(this.byClass.values());
    this.byClass.clear();
    this.ready.clear();
    this.opened.clear();
    for (const settled of all) if (settled.status === 'fulfilled') settled.value.close();
  }

  private async ofClass(classMs: number): Promise<ZkSession> {
    if (this.closed) throw new LeaseError(ErrorCode.STORE_UNAVAILABLE, 'the store is closed');
    const open = this.ready.get(classMs);
    if (open?.usable) return open;
    const pending = this.byClass.get(classMs);
    const current = pending && (await pending.catch(() => undefined));
    if (pending && current?.usable) return current;
    if (pending && this.byClass.get(classMs) !== pending) return this.ofClass(classMs);
    const opening = ZkSession.open(this.zk, this.hosts, classMs, this.callTimeoutMs).then(
      (session) => {
        if (this.closed) {
          session.close();
          throw new LeaseError(ErrorCode.STORE_UNAVAILABLE, 'the store is closed');
        }
        this.opened.add(session);
        if (this.byClass.get(classMs) === opening) this.ready.set(classMs, session);
        return session;
      },
    );
    this.byClass.set(classMs, opening);
    this.ready.delete(classMs);
    opening.catch(() => {
      if (this.byClass.get(classMs) === opening) this.byClass.delete(classMs);
    });
    if (current) {
      this.opened.delete(current);
      current.close();
    }
    return opening;
  }
}
