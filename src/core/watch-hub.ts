import { invalidArgument, type LeaseError } from './errors.js';
import type { Unwatch, WatchEvent, WatchListener } from './store.js';

export type { Unwatch } from './store.js';

/**
 * Told when a store's watch fails (a `STORE_UNAVAILABLE` LeaseError, once per run of failures; the
 * watch keeps trying by itself). The default is `warnWatchError`.
 */
export type WatchErrorHandler = (error: LeaseError) => void;

/** The default `onWatchError`: a process warning of type `LeaseholdWarning` with the error's code. */
export function warnWatchError(error: LeaseError): void {
  process.emitWarning(error.message, { type: 'LeaseholdWarning', code: error.code });
}

/** A store's `onWatchError` option: `warnWatchError` when not given, else it must be a function. */
export function resolveOnWatchError(value: WatchErrorHandler | undefined): WatchErrorHandler {
  const onWatchError = value ?? warnWatchError;
  if (typeof onWatchError !== 'function')
    throw invalidArgument('onWatchError', 'must be a function');
  return onWatchError;
}

/** A listener was added: `first` when the hub had none, `newPrefix` when no other listener has its prefix. */
export interface ListenerAdded {
  readonly first: boolean;
  readonly newPrefix: boolean;
}

/** A listener went: `last` when none is left, `prefixGone` when no listener is left with its prefix. */
export interface ListenerRemoved {
  readonly last: boolean;
  readonly prefixGone: boolean;
}

/** What the hub tells a store's watch about its listeners. */
export interface WatchSource {
  /**
   * A listener was added (on the first, start watching). Returns what its `ready` is: the promise
   * that settles once the watch covers the prefix.
   */
  added(change: ListenerAdded): Promise<void>;
  /** A listener went (after the last, stop watching). */
  removed(change: ListenerRemoved): void;
}

interface Entry {
  readonly prefix: string;
  readonly listener: WatchListener;
}

/**
 * The listeners of one store's `watch`, and what every store does with them alike: the store's
 * watch starts with the first listener and stops after the last (`WatchSource`); an event goes to
 * each listener whose prefix it matches, and one that throws stops neither the others nor the
 * store (its error is thrown again on the next tick, an uncaught exception, as `safeEmit` does);
 * a run of failures is reported once (`failed` until `recovered`).
 */
export class WatchHub {
  private readonly entries = new Set<Entry>();
  private failing = false;

  /** `source` is the store's watch the hub tells of its listeners (`StoreWatch` passes itself). */
  constructor(
    private readonly onError: WatchErrorHandler,
    private readonly source: WatchSource,
  ) {}

  /** Adds a listener; the returned function removes it. */
  add(prefix: string, listener: WatchListener): Unwatch {
    const entry: Entry = { prefix, listener };
    const first = this.entries.size === 0;
    const newPrefix = !this.hasPrefix(prefix);
    this.entries.add(entry);
    const ready = this.source.added({ first, newPrefix });
    ready.catch(() => {}); // for whoever awaits `ready`; failures are reported through onError
    const unwatch = (): void => {
      if (!this.entries.delete(entry)) return;
      const last = this.entries.size === 0;
      this.source.removed({ last, prefixGone: !this.hasPrefix(prefix) });
    };
    return Object.assign(unwatch, { ready });
  }

  /** Whether any listener is left. */
  get active(): boolean {
    return this.entries.size > 0;
  }

  /** The distinct prefixes listened to. */
  prefixes(): string[] {
    return [...new Set([...this.entries].map((entry) => entry.prefix))];
  }

  /** Whether some listener's prefix covers `resource`. */
  matches(resource: string): boolean {
    for (const { prefix } of this.entries) if (resource.startsWith(prefix)) return true;
    return false;
  }

  /** Calls each listener whose prefix `event.resource` starts with. */
  deliver(event: WatchEvent): void {
    for (const { prefix, listener } of [...this.entries]) {
      if (!event.resource.startsWith(prefix)) continue;
      try {
        listener(event);
      } catch (error) {
        process.nextTick(() => {
          throw error; // a listener's own bug surfaces as it would from an EventEmitter
        });
      }
    }
  }

  /** Reports `error` unless this run of failures was reported already. */
  failed(error: LeaseError): void {
    if (this.failing) return;
    this.failing = true;
    this.onError(error);
  }

  /** The watch is in place again: the next failure is reported. */
  recovered(): void {
    this.failing = false;
  }

  /** Drops every listener without telling the source (the store stops its watch itself). */
  clear(): void {
    this.entries.clear();
  }

  private hasPrefix(prefix: string): boolean {
    for (const entry of this.entries) if (entry.prefix === prefix) return true;
    return false;
  }
}
