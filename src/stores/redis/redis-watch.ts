import { StoreWatch } from '../../core/store-watch.js';
import type { WatchErrorHandler } from '../../core/watch-hub.js';
import type { RedisClient, RedisSubscriber } from './redis-driver.js';
import { mapRedisError } from './redis-errors.js';

/**
 * Release notifications: one subscriber connection (`duplicate()`), made on the first `watch` and
 * closed with the last. The release scripts PUBLISH each released resource on the store's channel.
 */
export class RedisWatch extends StoreWatch {
  private subscriber: RedisSubscriber | undefined;
  private subscribed: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: RedisClient,
    private readonly channel: string,
    onError: WatchErrorHandler,
  ) {
    super(onError);
  }

  added({ first }: { first: boolean }): Promise<void> {
    if (first && !this.subscriber) this.start();
    return this.subscribed;
  }

  removed({ last }: { last: boolean }): void {
    if (last) this.stop();
  }

  protected doStop(): void {
    this.subscriber?.disconnect();
    this.subscriber = undefined;
  }

  private start(): void {
    const subscriber = this.client.duplicate();
    this.subscriber = subscriber;
    subscriber.on('error', (error) => this.report(error));
    subscriber.on('message', (channel, resource) => {
      if (channel !== this.channel) return;
      this.hub.recovered();
      this.hub.deliver({ type: 'released', resource });
    });
    this.subscribed = subscriber.subscribe(this.channel).then(
      () => this.hub.recovered(),
      (error: unknown) => {
        this.report(error);
        throw mapRedisError(error, 'watch');
      },
    );
    this.subscribed.catch(() => {}); // reported through onError; `ready` rejects for whoever awaits it
  }

  private report(error: unknown): void {
    if (this.subscriber) this.hub.failed(mapRedisError(error, 'watch'));
  }
}
