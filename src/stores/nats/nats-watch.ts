import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Clock } from '../../core/time.js';
import type { WatchEvent } from '../../core/store.js';
import { StoreWatch } from '../../core/store-watch.js';
import type { Unwatch, WatchErrorHandler } from '../../core/watch-hub.js';
import type { NatsKv, NatsKvEntry, NatsKvIterator } from './nats-driver.js';
import { mapNatsError } from './nats-errors.js';
import { resourceOf } from './nats-keys.js';
import { decodeEntry, type StoredRecord } from './nats-record.js';

/** What the watch knows of a held record: enough to tell a renewal from a new grant, and when it lapses. */
interface Held {
  readonly revision: number;
  readonly token: number;
  timer?: NodeJS.Timeout;
}

export interface NatsWatchSettings {
  readonly bucket: string;
  readonly timeoutMs: number;
  readonly maxClockSkewMs: number;
  readonly clock: Pick<Clock, 'now'>;
  readonly onError: WatchErrorHandler;
  /** Told of every leasehold record the watch delivers (`null`: deleted), at its revision. */
  readonly seen?: (resource: string, stored: StoredRecord | null, revision: number) => void;
  /** The watch stopped or failed: what `seen` was told may have moved on unseen since. */
  readonly lost?: () => void;
}

/** How soon a failed KV watch is started again. */
const RESTART_MS = 250;

/**
 * Lease events from one KV watch over the whole bucket, started with the first `watch` and stopped
 * with the last. A write with a new token is `acquired`, a release `released`. Nothing is written
 * when a lease lapses (expiry is judged on the callers' clocks), so the watch keeps a timer per
 * held record at `expiresAt + maxClockSkewMs`, when contenders start to count it as free: if no
 * write came meanwhile, it reports `expired`, and a waiting acquirer tries at once instead of at
 * its next poll. A watch that fails is started again; it first replays each key's last value, so
 * a release missed meanwhile is still reported.
 *
 * What is a replay and what is new is told by revision: before each watch starts, the stream's
 * last sequence is read, and an entry at or below it is a replay. The driver's own `isUpdate`
 * marks the last replayed value as new (it counts one too many), which made a watch started after
 * a write report that write as if it had just happened.
 */
export class NatsWatch extends StoreWatch {
  private iterator: NatsKvIterator<NatsKvEntry> | undefined;
  private running = false;
  private ready: Promise<void> = Promise.resolve();
  private readonly held = new Map<string, Held>();
  private restartTimer: NodeJS.Timeout | undefined;
  /** The stream's last sequence when the running watch started: entries up to it are replays. */
  private replayedUpTo: number | undefined;

  constructor(
    private readonly kv: NatsKv,
    private readonly settings: NatsWatchSettings,
  ) {
    super(settings.onError);
  }

  added(): Promise<void> {
    if (!this.running) this.start();
    return this.ready;
  }

  removed({ last }: { last: boolean }): void {
    if (last) this.stop();
  }

  protected doStop(): void {
    this.running = false;
    clearTimeout(this.restartTimer);
    this.iterator?.stop();
    this.iterator = undefined;
    for (const held of this.held.values()) clearTimeout(held.timer);
    this.held.clear();
    this.settings.lost?.();
  }

  private start(): void {
    this.running = true;
    const { timeoutMs, bucket } = this.settings;
    const opened = this.kv.status().then((status) => {
      this.replayedUpTo = status.streamInfo?.state?.last_seq;
      return this.kv.watch({ key: '>' });
    });
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new LeaseError(
              ErrorCode.STORE_UNAVAILABLE,
              `NATS KV watch on bucket "${bucket}" failed: not in place within ${timeoutMs} ms (it keeps trying)`,
            ),
          ),
        timeoutMs,
      );
      timer.unref();
      opened.then(
        () => {
          clearTimeout(timer);
          resolve();
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(mapNatsError(error, 'watch', bucket));
        },
      );
    });
    this.ready.catch(() => {}); // for whoever awaits `ready`; the watch itself keeps trying
    void this.consume(opened);
  }

  private async consume(opened: Promise<NatsKvIterator<NatsKvEntry>>): Promise<void> {
    try {
      const iterator = await opened;
      if (!this.running) return iterator.stop();
      this.iterator = iterator;
      this.hub.recovered();
      for await (const entry of iterator) {
        if (!this.running || this.iterator !== iterator) break;
        this.take(entry);
      }
      if (this.running && this.iterator === iterator) throw new Error('the watch ended');
    } catch (error) {
      if (!this.running) return;
      this.hub.failed(mapNatsError(error, 'watch', this.settings.bucket));
      this.iterator = undefined;
      this.settings.lost?.();
      this.restartTimer = setTimeout(() => {
        if (this.running && this.hub.active) this.start();
      }, RESTART_MS);
      this.restartTimer.unref();
    }
  }

  private take(entry: NatsKvEntry): void {
    const resource = resourceOf(entry.key);
    if (resource === undefined) return;
    let stored;
    try {
      stored = decodeEntry(resource, entry);
    } catch {
      return; // not a leasehold value: nothing to report
    }
    this.settings.seen?.(resource, stored, entry.revision);
    const before = this.held.get(resource);
    clearTimeout(before?.timer);
    const update =
      this.replayedUpTo === undefined
        ? entry.isUpdate !== false
        : entry.revision > this.replayedUpTo;
    if (stored === null || stored.record.owner === '') {
      this.held.delete(resource);
      if (before || (update && stored !== null)) this.emit({ type: 'released', resource });
      return;
    }
    const { token, expiresAt } = stored.record;
    const held: Held = { revision: entry.revision, token };
    this.held.set(resource, held);
    if (update && before?.token !== token) this.emit({ type: 'acquired', resource });
    const wait = expiresAt + this.settings.maxClockSkewMs + 1 - this.settings.clock.now();
    if (wait < 0 && !update) {
      this.held.delete(resource); // lapsed before the watch began: the next reconcile finds it
      return;
    }
    held.timer = setTimeout(
      () => {
        if (this.held.get(resource) !== held) return;
        this.held.delete(resource);
        this.emit({ type: 'expired', resource });
      },
      Math.max(0, wait),
    );
    held.timer.unref();
  }

  private emit(event: WatchEvent): void {
    this.hub.deliver(event);
  }
}

/**
 * The same type as `Unwatch`, which every store's `watch` returns.
 * @deprecated Use `Unwatch`.
 */
export type NatsUnwatch = Unwatch;
