import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { WatchEvent } from '../../core/store.js';
import { StoreWatch } from '../../core/store-watch.js';
import type { Unwatch, WatchErrorHandler } from '../../core/watch-hub.js';
import type { EtcdClient, EtcdKeyValue, EtcdWatchResponse, EtcdWatcher } from './etcd-driver.js';
import { mapEtcdError } from './etcd-errors.js';
import { KIND, type EtcdKeys } from './etcd-keys.js';
import { decodeRecord } from './etcd-record.js';

/**
 * Lease events from one etcd watch over the store's whole key prefix, made on the first `watch`
 * and cancelled with the last. A token key written is `acquired` (only an acquire writes it); a
 * hold key emptied is `released` (as is one deleted in the same revision as its record was
 * blanked, the earlier layout's release); a hold key deleted otherwise is `expired` (etcd revoked
 * the lease it was attached to). etcd3 resumes a broken stream from the last revision it
 * saw, so events are not lost across a reconnect unless etcd compacted them meanwhile.
 */
export class EtcdWatch extends StoreWatch {
  private watcher: EtcdWatcher | undefined;
  private ready: Promise<void> = Promise.resolve();
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: EtcdClient,
    private readonly keys: EtcdKeys,
    private readonly timeoutMs: number,
    onError: WatchErrorHandler,
  ) {
    super(onError);
  }

  added(): Promise<void> {
    if (!this.watcher) this.start();
    return this.ready;
  }

  removed({ last }: { last: boolean }): void {
    if (last) this.stop();
  }

  protected doStop(): void {
    clearTimeout(this.restartTimer);
    const watcher = this.watcher;
    this.watcher = undefined;
    watcher?.cancel().catch(() => {}); // the stream may already be gone; nothing is left to undo
  }

  private start(): void {
    const watcher = this.client.watch().inRange(this.keys.names('')).watcher();
    this.watcher = watcher;
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new LeaseError(
              ErrorCode.STORE_UNAVAILABLE,
              `etcd watch failed: not in place within ${this.timeoutMs} ms (it keeps trying)`,
            ),
          ),
        this.timeoutMs,
      );
      timer.unref();
      watcher.on('connected', () => {
        clearTimeout(timer);
        this.hub.recovered();
        resolve();
      });
    });
    this.ready.catch(() => {}); // for whoever awaits `ready`; the watch itself keeps trying
    watcher.on('data', (response) => {
      if (this.watcher === watcher) this.dispatch(response);
    });
    watcher.on('disconnected', (error) => this.report(watcher, error));
    watcher.on('error', (error) => {
      // The server cancelled the watch (e.g. its revision was compacted): start a new one.
      this.report(watcher, error);
      if (this.watcher !== watcher) return;
      this.watcher = undefined;
      this.restartTimer = setTimeout(() => {
        if (!this.watcher && this.hub.active) this.start();
      }, 100);
      this.restartTimer.unref();
    });
  }

  private dispatch(response: EtcdWatchResponse): void {
    const events: WatchEvent[] = [];
    const blanked = new Set<string>();
    for (const { type, kv } of response.events) {
      const parsed = this.keys.parse(kv.key);
      if (parsed?.kind === KIND.record && type === 'Put' && isBlank(kv)) {
        blanked.add(`${kv.mod_revision}:${parsed.resource}`);
      }
    }
    for (const { type, kv } of response.events) {
      const parsed = this.keys.parse(kv.key);
      if (!parsed) continue;
      const { resource, kind } = parsed;
      if (kind === KIND.token && type === 'Put') events.push({ type: 'acquired', resource });
      if (kind !== KIND.hold) continue;
      if (type === 'Put' && kv.value.length === 0) events.push({ type: 'released', resource });
      if (type === 'Delete') {
        // Deleted with its record blanked in the same revision: a release of the earlier layout.
        const how = blanked.has(`${kv.mod_revision}:${resource}`) ? 'released' : 'expired';
        events.push({ type: how, resource });
      }
    }
    for (const event of events) this.hub.deliver(event);
  }

  private report(watcher: EtcdWatcher, error: unknown): void {
    if (this.watcher === watcher) this.hub.failed(mapEtcdError(error, 'watch'));
  }
}

function isBlank(kv: EtcdKeyValue): boolean {
  try {
    return decodeRecord(kv, '').owner === '';
  } catch {
    return false;
  }
}

/**
 * The same type as `Unwatch`, which every store's `watch` returns.
 * @deprecated Use `Unwatch`.
 */
export type EtcdUnwatch = Unwatch;
