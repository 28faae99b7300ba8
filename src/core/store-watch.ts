import type { WatchListener } from './store.js';
import {
  WatchHub,
  type ListenerAdded,
  type ListenerRemoved,
  type Unwatch,
  type WatchErrorHandler,
  type WatchSource,
} from './watch-hub.js';

/**
 * A store's watch, wired to its own `WatchHub`: `add` is what the store's `watch` returns, and
 * `stop` drops every listener before `doStop` ends the store's side. A subclass says only what
 * the store does: when to start and stop watching (`added`, `removed`) and how (`doStop`).
 */
export abstract class StoreWatch implements WatchSource {
  protected readonly hub: WatchHub;

  constructor(onError: WatchErrorHandler) {
    this.hub = new WatchHub(onError, this);
  }

  /** Adds a listener; the returned function removes it, and its `ready` is what `added` returns. */
  add(prefix: string, listener: WatchListener): Unwatch {
    return this.hub.add(prefix, listener);
  }

  /** Drops every listener (without telling `removed`) and stops watching. */
  stop(): void {
    this.hub.clear();
    this.doStop();
  }

  abstract added(change: ListenerAdded): Promise<void>;
  abstract removed(change: ListenerRemoved): void;
  /** Ends the store's side of the watch (connection, timers); no listener is left. */
  protected abstract doStop(): void;
}
