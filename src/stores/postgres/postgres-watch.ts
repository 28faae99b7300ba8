import type { WatchListener } from '../../core/store.js';
import type { PgNotification, PgPoolClient } from './postgres-driver.js';

export interface NotifierOptions {
  /** A dedicated connection for LISTEN. */
  readonly connect: () => Promise<PgPoolClient>;
  readonly channel: string;
  /** Deadline of the LISTEN and of each liveness probe. */
  readonly queryTimeoutMs: number;
  /**
   * Called when the connection fails (it reconnects by itself; `streak` counts the failures in a
   * row) or a listener throws (`streak` 0).
   */
  readonly onError: (error: unknown, during: string, streak: number) => void;
}

/** How often an idle LISTEN connection is probed, so a silently dead one is replaced. */
export const PROBE_EVERY_MS = 10_000;
const RETRY_MAX_MS = 5000;

interface Subscription {
  readonly prefix: string;
  readonly listener: WatchListener;
}

/**
 * One LISTEN connection per store, opened on the first subscription and closed after the last.
 * It reconnects with backoff when it drops; releases that happen while it is down are not heard.
 */
export class Notifier {
  private readonly subscriptions = new Set<Subscription>();
  private client: PgPoolClient | undefined;
  private connecting = false;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;
  private closed = false;

  constructor(private readonly options: NotifierOptions) {}

  add(prefix: string, listener: WatchListener): () => void {
    const subscription = { prefix, listener };
    this.subscriptions.add(subscription);
    if (!this.client && !this.connecting && !this.timer) void this.open();
    return () => {
      if (!this.subscriptions.delete(subscription)) return;
      if (this.subscriptions.size === 0) this.drop(undefined);
    };
  }

  close(): void {
    this.closed = true;
    this.subscriptions.clear();
    this.drop(undefined);
  }

  private get wanted(): boolean {
    return !this.closed && this.subscriptions.size > 0;
  }

  private async open(): Promise<void> {
    this.connecting = true;
    let client: PgPoolClient | undefined;
    try {
      client = await this.options.connect();
      const current = client;
      current.on('notification', (message) => {
        if (this.client === current) this.deliver(message);
      });
      // Stays attached for the connection's life: an 'error' with no listener would crash the process.
      current.on('error', (error) => {
        if (this.client === current) this.lost(error);
      });
      current.on('end', () => {
        if (this.client === current) this.lost(new Error('the LISTEN connection ended'));
      });
      await current.query({
        text: `LISTEN "${this.options.channel}"`,
        query_timeout: this.options.queryTimeoutMs,
      });
      this.connecting = false;
      if (!this.wanted) {
        current.release(true);
        return;
      }
      this.client = current;
      this.failures = 0;
      this.schedule(PROBE_EVERY_MS, () => void this.probe());
    } catch (error) {
      this.connecting = false;
      client?.release(error instanceof Error ? error : true);
      if (!this.wanted) return;
      this.failures++;
      this.options.onError(error, 'connecting the watch connection', this.failures);
      this.schedule(this.retryDelay(), () => void this.open());
    }
  }

  /** A round trip on the idle LISTEN connection; a paused or vanished server fails it. */
  private async probe(): Promise<void> {
    const client = this.client;
    if (!client) return;
    try {
      await client.query({ text: 'SELECT 1', query_timeout: this.options.queryTimeoutMs });
      if (this.client === client) this.schedule(PROBE_EVERY_MS, () => void this.probe());
    } catch (error) {
      if (this.client === client) this.lost(error);
    }
  }

  private lost(error: unknown): void {
    this.drop(error instanceof Error ? error : new Error(String(error)));
    if (!this.wanted) return;
    this.failures++;
    this.options.onError(error, 'on the watch connection', this.failures);
    this.schedule(this.retryDelay(), () => void this.open());
  }

  /** Gives the connection back to the pool to be closed (never reused: it is LISTENing). */
  private drop(error: Error | undefined): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const client = this.client;
    this.client = undefined;
    client?.release(error ?? true);
  }

  private deliver(message: PgNotification): void {
    if (message.channel !== this.options.channel || message.payload === undefined) return;
    const resource = message.payload;
    for (const { prefix, listener } of [...this.subscriptions]) {
      if (!resource.startsWith(prefix)) continue;
      try {
        listener({ type: 'released', resource });
      } catch (error) {
        this.options.onError(error, 'in a watch listener', 0);
      }
    }
  }

  private schedule(ms: number, fn: () => void): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      fn();
    }, ms);
    this.timer.unref();
  }

  /** 100 ms doubling per consecutive failure up to 5 s, with ±25 % jitter. */
  private retryDelay(): number {
    const base = Math.min(RETRY_MAX_MS, 100 * 2 ** Math.min(this.failures - 1, 10));
    return Math.round(base * (0.75 + Math.random() * 0.5));
  }
}
