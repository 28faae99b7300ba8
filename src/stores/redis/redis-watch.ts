import type { LeaseError } from '../../core/errors.js';
import type { WatchListener } from '../../core/store.js';
import type { RedisClient, RedisSubscriber } from './redis-driver.js';
import { mapRedisError } from './redis-errors.js';

interface Entry {
  readonly prefix: string;
  readonly listener: WatchListener;
}

/** The unsubscribe function `watch` returns; `ready` settles once the subscription is in place. */
export type Unwatch = (() => void) & {
  /** Resolves once the subscription is in place; rejects with `STORE_UNAVAILABLE` if it failed. */
  readonly ready: Promise<void>;
};

/**
 * Release notifications: one subscriber connection (`duplicate()`), made on the first `watch` and
 * closed with the last. The release scripts PUBLISH each released resource on the store's channel.
 */
export class RedisWatch {
  private subscriber: RedisSubscriber | undefined;
  private subscribed: Promise<void> = Promise.resolve();
  private readonly entries = new Set<Entry>();
  /** One report per connection failure, not one per reconnect attempt. */
  private reported = false;

  constructor(
    private readonly client: RedisClient,
    private readonly channel: string,
    private readonly onError: (error: LeaseError) => void,
  ) {}

  add(prefix: string, listener: WatchListener): Unwatch {
    const entry: Entry = { prefix, listener };
    this.entries.add(entry);
    if (!this.subscriber) this.start();
    const unwatch = (): void => {
      if (this.entries.delete(entry) && this.entries.size === 0) this.stop();
    };
    return Object.assign(unwatch, { ready: this.subscribed });
  }

  stop(): void {
    this.entries.clear();
    this.subscriber?.disconnect();
    this.subscriber = undefined;
  }

  private start(): void {
    const subscriber = this.client.duplicate();
    this.subscriber = subscriber;
    subscriber.on('error', (error) => this.report(error));
    subscriber.on('message', (channel, resource) => {
      if (channel !== this.channel) return;
      this.reported = false;
      for (const { prefix, listener } of [...this.entries]) {
        if (resource.startsWith(prefix)) listener({ type: 'released', resource });
      }
    });
    this.subscribed = subscriber.subscribe(this.channel).then(
      () => {
        this.reported = false;
      },
      (error: unknown) => {
        this.report(error);
        throw mapRedisError(error, 'watch');
      },
    );
    this.subscribed.catch(() => {}); // reported through onError; `ready` rejects for whoever awaits it
  }

  private report(error: unknown): void {
    if (this.reported || !this.subscriber) return;
    this.reported = true;
    this.onError(mapRedisError(error, 'watch'));
  }
}
