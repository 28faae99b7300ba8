import type { Unwatch, WatchEvent } from '../../core/store.js';
import { StoreWatch } from '../../core/store-watch.js';
import type { WatchErrorHandler } from '../../core/watch-hub.js';
import { ZK_EVENT, type ZkEvent } from './zookeeper-driver.js';
import { mapZookeeperError } from './zookeeper-errors.js';
import { decodeRecord } from './zookeeper-record.js';
import { decodeName, type ZkPaths } from './zookeeper-paths.js';
import type { ZkSession } from './zookeeper-session.js';
import type { ZkSessions } from './zookeeper-sessions.js';

/** How soon the watches are set up again after a failure. */
const RETRY_MS = 250;

/**
 * Lease events from ZooKeeper's one-shot watches, on the store's main session: a child watch on
 * the records znode (new resources) and an existence watch on the hold znode of every resource
 * under a watched prefix, set again each time it fires. A hold deleted is `released` when its
 * record was blanked with it, `expired` otherwise (the holder's session expired, or a lapsed lease
 * was taken over); a hold created is `acquired`. The driver sets the watches again on a new
 * connection by itself; after the session expired, they are set up afresh on a new one.
 */
export class ZkWatch extends StoreWatch {
  /** Resources whose hold znode has a watch armed. */
  private readonly armed = new Set<string>();
  private generation = 0;
  private ready: Promise<void> = Promise.resolve();
  private retryTimer: NodeJS.Timeout | undefined;
  private stopExpiry: (() => void) | undefined;

  constructor(
    private readonly sessions: ZkSessions,
    private readonly paths: ZkPaths,
    onError: WatchErrorHandler,
  ) {
    super(onError);
  }

  /** A listener's `ready` settles once every matching hold znode is watched. */
  added(): Promise<void> {
    // Every new listener lists the resources again: its prefix may cover ones not armed yet.
    this.ready = this.start();
    this.ready.catch(() => {}); // for whoever awaits `ready`; the watch itself keeps trying
    return this.ready;
  }

  removed({ last }: { last: boolean }): void {
    if (last) this.stop();
  }

  protected doStop(): void {
    this.generation++;
    this.armed.clear();
    clearTimeout(this.retryTimer);
    this.stopExpiry?.();
  }

  /** Lists the resources and arms what is not armed yet, for the current generation. */
  private async start(): Promise<void> {
    const generation = this.generation;
    try {
      const session = await this.sessions.main();
      if (generation !== this.generation) return;
      this.stopExpiry?.();
      this.stopExpiry = session.onExpired(() => this.restart());
      await this.scan(session, generation, false);
      this.hub.recovered();
    } catch (error) {
      this.fail(error);
      throw mapZookeeperError(error, 'watch');
    }
  }

  /**
   * Lists the resources and arms the matching ones not armed yet. With `announce` (a resource
   * appeared since the last listing), what happened to each new one is told: `acquired` when its
   * hold is there (its first acquire created it), else how the hold went.
   */
  private async scan(session: ZkSession, generation: number, announce: boolean): Promise<void> {
    const children = await session.getChildren(this.paths.records, (event) =>
      this.onChildren(event, session, generation),
    );
    const wanted = (children ?? [])
      .map(decodeName)
      .filter((r): r is string => r !== undefined && this.matches(r) && !this.armed.has(r));
    await Promise.all(
      wanted.map(async (resource) => {
        const held = await this.arm(session, generation, resource);
        if (!announce || held === undefined || generation !== this.generation) return;
        if (held) this.dispatch({ type: 'acquired', resource });
        else await this.ended(session, resource);
      }),
    );
  }

  /** Watches the hold of `resource`; whether it exists now (`undefined`: it was armed already). */
  private async arm(
    session: ZkSession,
    generation: number,
    resource: string,
  ): Promise<boolean | undefined> {
    if (this.armed.has(resource)) return undefined;
    this.armed.add(resource);
    try {
      const stat = await session.exists(this.paths.of(resource).hold, (event) =>
        this.onHold(event, session, generation, resource),
      );
      return stat !== null;
    } catch (error) {
      this.armed.delete(resource);
      throw error;
    }
  }

  /**
   * Tells how the hold of `resource` went: `released` when its record was blanked with it.
   * `retaken`: a new hold is there already, so the record is the new holder's and tells nothing.
   */
  private async ended(session: ZkSession, resource: string, retaken = false): Promise<void> {
    const path = this.paths.of(resource).record;
    let released = false;
    if (!retaken)
      try {
        const record = await session.getData(path);
        released = record !== null && decodeRecord(resource, record.data).o === '';
      } catch {
        // unknown: it went, and not by a release seen here
      }
    this.dispatch({ type: released ? 'released' : 'expired', resource });
  }

  private onChildren(_: ZkEvent, session: ZkSession, generation: number): void {
    if (generation !== this.generation) return;
    this.scan(session, generation, true).catch((error: unknown) => this.fail(error));
  }

  private onHold(event: ZkEvent, session: ZkSession, generation: number, resource: string): void {
    if (generation !== this.generation) return;
    this.armed.delete(resource);
    const type = event.getType();
    // Between the event and the new watch the hold may have changed again, unwatched: what the
    // re-arming read finds tells of it (a release right after an acquire, or the reverse).
    const rearm = (expected: boolean | undefined): void => {
      if (!this.matches(resource)) return;
      this.arm(session, generation, resource).then(
        (held) => {
          if (held === undefined || expected === undefined || held === expected) return;
          if (generation !== this.generation) return;
          if (held) this.dispatch({ type: 'acquired', resource });
          else return this.ended(session, resource);
        },
        (error: unknown) => this.fail(error),
      );
    };
    if (type === ZK_EVENT.NODE_CREATED) {
      this.dispatch({ type: 'acquired', resource });
      rearm(true);
    } else if (type === ZK_EVENT.NODE_DELETED) {
      // Watched again before the record is read, so the read sees the state a later event would
      // correct: a record already rewritten by the next grant reads as that holder's.
      if (!this.matches(resource)) return void this.ended(session, resource);
      this.arm(session, generation, resource).then(
        async (held) => {
          if (generation !== this.generation) return;
          await this.ended(session, resource, held === true);
          if (held) this.dispatch({ type: 'acquired', resource });
        },
        (error: unknown) => this.fail(error),
      );
    } else {
      rearm(undefined);
    }
  }

  private matches(resource: string): boolean {
    return this.hub.matches(resource);
  }

  private dispatch(event: WatchEvent): void {
    this.hub.deliver(event);
  }

  /** The session expired and its watches with it: everything is set up again on a new one. */
  private restart(): void {
    if (!this.hub.active) return;
    this.generation++;
    this.armed.clear();
    this.ready = this.start();
    this.ready.catch(() => {});
  }

  private fail(error: unknown): void {
    this.hub.failed(mapZookeeperError(error, 'watch'));
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.restart(), RETRY_MS);
    this.retryTimer.unref();
  }
}

/**
 * The same type as `Unwatch`, which every store's `watch` returns.
 * @deprecated Use `Unwatch`.
 */
export type ZookeeperUnwatch = Unwatch;
