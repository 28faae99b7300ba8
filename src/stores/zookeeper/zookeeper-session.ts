import { CallDeadlines } from '../../core/call-deadlines.js';
import { noAnswer, withDeadline } from '../../core/deadline.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { zkCode } from './zookeeper-errors.js';
import {
  ZK_CLOSING_STATE,
  ZK_CODE,
  type ZkClient,
  type ZkException,
  type ZkModule,
  type ZkOpResult,
  type ZkStat,
  type ZkTransaction,
  type ZkWatcher,
} from './zookeeper-driver.js';

/** How a `multi` went: every operation applied, or the first one that failed and why. */
export type MultiOutcome =
  | { readonly ok: true; readonly results: readonly ZkOpResult[] }
  | { readonly ok: false; readonly index: number; readonly code: number };

/**
 * After trying every server, the driver waits up to this long before the next round (its
 * default is a second): a restarted server is reconnected to within about this.
 */
const SPIN_DELAY_MS = 200;

/** How many remembered holds make `track` forget those nobody can believe in any more. */
const SWEEP_FROM = 1024;

/**
 * One ZooKeeper session (one driver client) with a deadline on every call. The driver has no
 * read timeout, so it never notices a server that stopped answering (a SIGSTOP, a black hole):
 * a call that misses its deadline fails with `STORE_UNAVAILABLE` and drops the connection, and
 * the driver reconnects (to the next server of the ensemble) with the same session.
 *
 * The session remembers the hold znodes it created or kept and until when (local monotonic
 * time) their holders may believe in them, so that `close` never ends a session whose ephemeral
 * holds someone still counts on: closing a session deletes them at once.
 */
export class ZkSession {
  private expired = false;
  private closed = false;
  private readonly holds = new Map<string, number>();
  private sweepAt = SWEEP_FROM;
  private readonly expiryListeners = new Set<() => void>();
  /** Rejecters of the calls waiting for an answer. */
  private readonly waiting = new Set<(error: unknown) => void>();
  /** Every call's deadline, on one timer (a timer per call cost more than the rest of the call). */
  private readonly deadlines: CallDeadlines;

  private constructor(
    private readonly client: ZkClient,
    /** The session's id, 16 hex digits. */
    readonly id: string,
    /** The session timeout the server granted, in ms. */
    readonly timeoutMs: number,
    private readonly callTimeoutMs: number,
  ) {
    this.deadlines = new CallDeadlines(callTimeoutMs, (what) =>
      noAnswer(`zookeeper ${what}`, callTimeoutMs),
    );
    client.on('expired', () => {
      this.expired = true;
      // The driver forgets requests it had not sent yet: they would wait for their deadline.
      for (const reject of [...this.waiting]) reject(sessionExpired());
      for (const listener of [...this.expiryListeners]) listener();
    });
  }

  /** Connects a new session asking for `sessionTimeoutMs`; fails after `callTimeoutMs`. */
  static async open(
    zk: ZkModule,
    hosts: readonly string[],
    sessionTimeoutMs: number,
    callTimeoutMs: number,
  ): Promise<ZkSession> {
    const client = zk.createClient(hosts.join(','), {
      sessionTimeout: sessionTimeoutMs,
      spinDelay: SPIN_DELAY_MS,
      retries: 0,
    });
    let onConnected = (): void => {};
    const connected = new Promise<void>((resolve) => {
      onConnected = resolve;
      client.on('connected', onConnected);
    });
    client.connect();
    try {
      await withDeadline(connected, callTimeoutMs, () =>
        noAnswer(`zookeeper connect to ${hosts.join(',')}`, callTimeoutMs),
      );
    } catch (error) {
      leave(client);
      throw error;
    } finally {
      client.removeListener('connected', onConnected);
    }
    return new ZkSession(
      client,
      client.getSessionId().toString('hex'),
      client.getSessionTimeout(),
      callTimeoutMs,
    );
  }

  /** Whether the session can still be used: not expired, not closed. */
  get usable(): boolean {
    return !this.expired && !this.closed;
  }

  /** Calls `listener` once if the server expires the session; returns the function that cancels it. */
  onExpired(listener: () => void): () => void {
    const once = (): void => {
      this.expiryListeners.delete(once);
      listener();
    };
    this.expiryListeners.add(once);
    return () => this.expiryListeners.delete(once);
  }

  /** Whether `owner` (a znode's `ephemeralOwner`) is this session. */
  owns(owner: Buffer): boolean {
    return owner.toString('hex') === this.id;
  }

  getData(path: string, watcher?: ZkWatcher): Promise<{ data: Buffer; stat: ZkStat } | null> {
    return this.call<{ data: Buffer; stat: ZkStat } | null>(
      'getData',
      (done) =>
        this.client.getData(path, watcher, (error, data, stat) =>
          zkCode(error) === ZK_CODE.NO_NODE
            ? done(null, null)
            : done(error, { data: data ?? Buffer.alloc(0), stat: stat! }),
        ),
      true,
    );
  }

  exists(path: string, watcher?: ZkWatcher): Promise<ZkStat | null> {
    return this.call<ZkStat | null>(
      'exists',
      (done) => this.client.exists(path, watcher, (error, stat) => done(error, stat ?? null)),
      true,
    );
  }

  /** The children's names, or `null` when the znode does not exist. */
  getChildren(path: string, watcher?: ZkWatcher): Promise<string[] | null> {
    return this.call<string[] | null>(
      'getChildren',
      (done) =>
        this.client.getChildren(path, watcher, (error, children) =>
          zkCode(error) === ZK_CODE.NO_NODE ? done(null, null) : done(error, children ?? []),
        ),
      true,
    );
  }

  /** An unconditional write; its `mtime` is the leader's clock at that transaction. */
  setData(path: string, data: Buffer): Promise<ZkStat> {
    return this.call<ZkStat>('setData', (done) =>
      this.client.setData(path, data, -1, (error, stat) => done(error, stat!)),
    );
  }

  mkdirp(path: string): Promise<void> {
    return this.call<void>('mkdirp', (done) => this.client.mkdirp(path, (error) => done(error)));
  }

  /** One atomic `multi`; a refused operation is an outcome, anything else a rejection. */
  multi(build: (tx: ZkTransaction) => void): Promise<MultiOutcome> {
    return this.call<MultiOutcome>('multi', (done) => {
      const tx = this.client.transaction();
      build(tx);
      tx.commit((error, results) => {
        if (!error) return done(null, { ok: true, results: results ?? [] });
        const index = results?.findIndex((r) => r.err !== undefined && r.err !== ZK_CODE.OK);
        if (index === undefined || index < 0) return done(error);
        done(null, { ok: false, index, code: results![index]!.err! });
      });
    });
  }

  /** Remembers that a holder may believe in `holdPath`, on this session, until `believedUntil`. */
  track(holdPath: string, believedUntil: number): void {
    if (believedUntil > (this.holds.get(holdPath) ?? 0)) this.holds.set(holdPath, believedUntil);
    if (this.holds.size < this.sweepAt) return;
    // Leases lost or dropped without a release stay listed until their holders stop believing.
    const now = performance.now();
    for (const [path, until] of this.holds) if (until <= now) this.holds.delete(path);
    this.sweepAt = Math.max(SWEEP_FROM, 2 * this.holds.size);
  }

  untrack(holdPath: string): void {
    this.holds.delete(holdPath);
  }

  /**
   * Ends the session when no holder may still believe in a hold it created (the server then
   * deletes its ephemeral znodes at once); otherwise leaves it without ending it, so its holds
   * last until the server expires the session or a contender finds them lapsed, as after a crash.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const now = performance.now();
    const believed = [...this.holds.values()].some((until) => until > now);
    if (believed || this.expired) {
      leave(this.client);
      return;
    }
    this.client.close();
    // A server that does not answer the goodbye must not keep the connection open for ever.
    setTimeout(() => leave(this.client), this.callTimeoutMs).unref();
  }

  /**
   * Runs one request with the deadline. A read (`read`) that lost its connection is sent once more
   * within the same deadline, on the connection the driver opens next; a write never is, since it
   * may have landed.
   */
  private call<T>(
    what: string,
    start: (done: (error: ZkException | null | undefined, value?: T) => void) => void,
    read = false,
  ): Promise<T> {
    if (this.expired) return Promise.reject(sessionExpired());
    let socket = this.client.connectionManager?.socket;
    return this.deadlines.bound<T>(what, (resolve, reject) => {
      let retries = read ? 1 : 0;
      this.waiting.add(reject);
      const run = (): void =>
        start((error, value) => {
          if (error && retries > 0 && zkCode(error) === ZK_CODE.CONNECTION_LOSS && !this.expired) {
            retries--;
            socket = this.client.connectionManager?.socket;
            return run();
          }
          this.waiting.delete(reject);
          if (error) reject(error);
          else resolve(value as T);
        });
      try {
        run();
      } catch (error) {
        this.waiting.delete(reject);
        throw error;
      }
      // Past the deadline: drop the connection it was sent on, so the driver reconnects.
      return () => {
        this.waiting.delete(reject);
        this.dropConnection(socket);
      };
    });
  }

  /** Drops the connection a call was sent on, if it is still the current one: the driver reconnects. */
  private dropConnection(socket: { destroy(): void } | undefined): void {
    const manager = this.client.connectionManager;
    if (socket && manager?.socket === socket) socket.destroy();
  }
}

function sessionExpired(): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    'the ZooKeeper session expired (its leases ended with it); the next call opens a new one',
  );
}

/** Leaves a session without ending it: the connection closes and is not reopened. */
function leave(client: ZkClient): void {
  const manager = client.connectionManager as
    | { state?: number; socket?: { destroy(): void }; connectTimeoutHandler?: NodeJS.Timeout }
    | undefined;
  if (!manager?.socket) {
    client.close();
    return;
  }
  clearTimeout(manager.connectTimeoutHandler);
  manager.state = ZK_CLOSING_STATE;
  const socket = manager.socket;
  socket.destroy();
  // A reconnection the driver had already scheduled opens one more socket: close that one too.
  setTimeout(() => {
    if (manager.socket !== socket) manager.socket?.destroy();
  }, SPIN_DELAY_MS * 2).unref();
}
