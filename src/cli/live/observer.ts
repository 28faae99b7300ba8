import type { LeaseRecord } from '../../core/lease.js';
import type { LeaseStore } from '../../core/store.js';
import type { ChangeEvent } from './change-event.js';
import { LeaseTracker, type TrackerUpdate } from './tracker.js';

/** Records read per `list` call. */
export const PAGE_SIZE = 1000;
/** How long a `watch` hint waits before the listing it triggers, so a burst of releases is one listing. */
const HINT_DELAY_MS = 30;

export interface ObserverOptions {
  store: LeaseStore;
  /** Only resources starting with this (matched literally). @default '' */
  prefix?: string;
  /** The time between two listings, in ms. */
  pollMs: number;
  /** How much ownership history to keep, in ms. @default 300000 */
  historyMs?: number;
  /** This machine's clock. @default Date.now */
  now?: () => number;
}

/** What each listing brings: the tracker's update, or the error the listing failed with. */
export type ObserverUpdate =
  | (TrackerUpdate & { readonly ok: true; readonly at: number })
  | { readonly ok: false; readonly at: number; readonly error: unknown };

/**
 * Watches a store: lists every record under a prefix (a page of `PAGE_SIZE` at a time) each
 * `pollMs`, and at once when the store's `watch` (where it has one) says something was released,
 * and feeds the listings to a `LeaseTracker`. Listings never overlap; a failed one is reported to
 * the listeners and retried at the next interval.
 */
export class LeaseObserver {
  readonly tracker: LeaseTracker;
  readonly prefix: string;
  readonly pollMs: number;
  readonly historyMs: number;
  private readonly store: LeaseStore;
  private readonly now: () => number;
  private readonly listeners = new Set<(update: ObserverUpdate) => void>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private unwatch: (() => void) | undefined;
  /** The last listing's error, until a listing succeeds. */
  lastError: unknown;
  /** Whether a listing has completed. */
  ready = false;

  constructor(options: ObserverOptions) {
    this.store = options.store;
    this.prefix = options.prefix ?? '';
    this.pollMs = options.pollMs;
    this.historyMs = options.historyMs ?? 300_000;
    this.now = options.now ?? Date.now;
    this.tracker = new LeaseTracker(this.store.maxClockSkewMs, this.historyMs);
  }

  /** Whether releases reach this observer through the store's `watch`, not only by polling. */
  get watching(): boolean {
    return this.unwatch !== undefined;
  }

  /** Starts watching and polling; resolves after the first listing (or its failure). */
  async start(): Promise<void> {
    if (this.store.capabilities.watch && this.store.watch) {
      this.unwatch = this.store.watch(this.prefix, () => this.refresh());
    }
    await this.poll();
  }

  /** Calls `listener` after each listing; returns the function that removes it. */
  onUpdate(listener: (update: ObserverUpdate) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops polling and watching; waits for a listing in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.unwatch?.();
    this.unwatch = undefined;
    await this.running;
  }

  /** The store's records under the prefix, as of the last listing. */
  records(): LeaseRecord[] {
    return [...this.tracker.tracked.values()].map((t) => t.record);
  }

  /** Lists again soon (a `watch` hint, or a change this process made). */
  refresh(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.poll(), HINT_DELAY_MS);
  }

  private async poll(): Promise<void> {
    if (this.stopped || this.running) return;
    clearTimeout(this.timer);
    this.running = this.listOnce();
    await this.running;
    this.running = undefined;
    if (this.stopped) return;
    const delay = this.again ? HINT_DELAY_MS : this.pollMs;
    this.again = false;
    this.timer = setTimeout(() => void this.poll(), delay);
  }

  private async listOnce(): Promise<void> {
    let update: ObserverUpdate;
    try {
      const records = await listAll(this.store, this.prefix);
      const at = this.now();
      update = { ...this.tracker.apply(records, at), ok: true, at };
      this.lastError = undefined;
      this.ready = true;
    } catch (error) {
      update = { ok: false, at: this.now(), error };
      this.lastError = error;
    }
    for (const listener of this.listeners) {
      try {
        listener(update);
      } catch (error) {
        process.emitWarning(`a lease observer listener threw: ${String(error)}`);
      }
    }
  }
}

/** Every record under `prefix`, `PAGE_SIZE` at a time. */
async function listAll(store: LeaseStore, prefix: string): Promise<LeaseRecord[]> {
  const records: LeaseRecord[] = [];
  let after = '';
  for (;;) {
    const page = await store.list({ prefix, limit: PAGE_SIZE, after });
    records.push(...page);
    if (page.length < PAGE_SIZE) return records;
    after = page.at(-1)!.resource;
  }
}

export type { ChangeEvent };
