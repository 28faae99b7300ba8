import { randomUUID } from 'node:crypto';
import type { LeaseError } from '../../core/errors.js';
import { StoreWatch } from '../../core/store-watch.js';
import type { WatchErrorHandler } from '../../core/watch-hub.js';
import type { PgNotification, PgPoolClient } from './postgres-driver.js';

export interface NotifierOptions {
  /** A dedicated connection for LISTEN. */
  readonly connect: () => Promise<PgPoolClient>;
  /** Resolves once the table (and its `_wait` table) exist. */
  readonly ready: () => Promise<void>;
  readonly channel: string;
  /** The statements that mark this watcher's prefixes as waited for, and unmark them. */
  readonly sql: { readonly register: string; readonly unregister: string };
  /** Deadline of the LISTEN and of each registration. */
  readonly queryTimeoutMs: number;
  /** Told when the connection fails, once per run of failures (it reconnects by itself). */
  readonly onError: WatchErrorHandler;
  /** The store's error mapping, `during` saying what failed. */
  readonly mapError: (error: unknown, during: string) => LeaseError;
}

/**
 * How often the registration is refreshed. The refresh is also the liveness probe of the idle
 * LISTEN connection, so a silently dead one is replaced.
 */
export const PROBE_EVERY_MS = 10_000;
/** How long a registration counts unless refreshed: a watcher that vanished stops costing releases a NOTIFY after this. */
export const REGISTRATION_TTL_MS = 3 * PROBE_EVERY_MS;
const RETRY_MAX_MS = 5000;

/**
 * One LISTEN connection per store, opened on the first subscription and closed after the last.
 *
 * Releases notify only resources some watcher has registered a prefix for (a row in the table's
 * `_wait` table, written on this connection after its LISTEN took effect, refreshed every
 * `PROBE_EVERY_MS`). So a listener hears, within milliseconds of its commit, every release whose
 * statement began after the registration of its prefix had committed: the release sees the row,
 * queues the NOTIFY, and the LISTEN was in place before the row was. A release that began earlier
 * (the watch was just starting, or a new prefix was being registered), or that happens while the
 * connection is down, is not heard: its record is free in the table for the next scan.
 */
export class Notifier extends StoreWatch {
  /** Settled by the next registration that commits (or the next failure): the `ready` of new listeners. */
  private waiting: { resolve: () => void; reject: (error: LeaseError) => void }[] = [];
  private client: PgPoolClient | undefined;
  /** The registration id of `client`: a new one per connection, so a late unregister of an old connection cannot remove the rows of the new one. */
  private id = '';
  private connecting = false;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;
  private closed = false;
  /** The connection a registration is running on; `again` asks it for one more (the prefixes changed). */
  private registering: PgPoolClient | undefined;
  private again = false;

  constructor(private readonly options: NotifierOptions) {
    super(options.onError);
  }

  /** A listener's `ready` settles once a registration covering its prefix committed. */
  added({ newPrefix }: { newPrefix: boolean }): Promise<void> {
    const ready = new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
    if (!this.client && !this.connecting && !this.timer) void this.open();
    else if (this.client && newPrefix) void this.register(this.client);
    else if (this.client && !this.registering) this.settle(undefined); // its prefix is registered
    return ready;
  }

  removed({ last, prefixGone }: { last: boolean; prefixGone: boolean }): void {
    if (last) this.unregister();
    else if (this.client && prefixGone) void this.register(this.client);
  }

  /** The store is closing. */
  protected doStop(): void {
    this.closed = true;
    this.settle(this.options.mapError(new Error('the store was closed'), 'watch'));
    // The rows lapse by themselves: closing does not wait for a server that may not answer.
    this.drop(undefined);
  }

  private get wanted(): boolean {
    return !this.closed && this.hub.active;
  }

  /** Settles the `ready` of the listeners added so far: resolved, or rejected with `error`. */
  private settle(error: LeaseError | undefined): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const { resolve, reject } of waiting) {
      if (error) reject(error);
      else resolve();
    }
  }

  private async open(): Promise<void> {
    this.connecting = true;
    let client: PgPoolClient | undefined;
    try {
      await this.options.ready();
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
      // LISTEN first: a release that sees the registration must find the LISTEN in place.
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
      this.id = randomUUID();
      this.failures = 0;
      void this.register(current);
    } catch (error) {
      this.connecting = false;
      client?.release(error instanceof Error ? error : true);
      if (!this.wanted) return;
      this.failures++;
      this.failed(error, 'connecting the watch connection');
      this.schedule(this.retryDelay(), () => void this.open());
    }
  }

  /**
   * Writes the current prefixes (and drops the others), then schedules the next refresh. A failure
   * is the connection's: it is replaced. Runs one at a time; a change meanwhile runs it again.
   */
  private async register(client: PgPoolClient): Promise<void> {
    if (this.registering === client) {
      this.again = true;
      return;
    }
    this.registering = client;
    try {
      do {
        if (this.client !== client) return;
        this.again = false;
        await client.query({
          text: this.options.sql.register,
          values: [this.id, this.hub.prefixes(), REGISTRATION_TTL_MS],
          query_timeout: this.options.queryTimeoutMs,
        });
      } while (this.again);
      if (this.client === client) {
        this.hub.recovered();
        this.settle(undefined);
      }
      if (this.client === client) this.schedule(PROBE_EVERY_MS, () => void this.register(client));
    } catch (error) {
      if (this.client === client) this.lost(error);
    } finally {
      if (this.registering === client) this.registering = undefined;
    }
  }

  /** After the last subscription: removes this watcher's rows, then closes the connection. */
  private unregister(): void {
    const { client, id } = this;
    if (!client) return this.drop(undefined);
    this.client = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    client
      .query({
        text: this.options.sql.unregister,
        values: [id],
        query_timeout: this.options.queryTimeoutMs,
      })
      .then(
        () => client.release(true),
        (error: unknown) => client.release(error instanceof Error ? error : true),
      );
  }

  private lost(error: unknown): void {
    this.drop(error instanceof Error ? error : new Error(String(error)));
    if (!this.wanted) return;
    this.failures++;
    this.failed(error, 'on the watch connection');
    this.schedule(this.retryDelay(), () => void this.open());
  }

  /** Reports a failure (once per run of them) and fails the `ready` of whoever waits. */
  private failed(error: unknown, during: string): void {
    const mapped = this.options.mapError(error, `watch (${during}; reconnecting)`);
    this.hub.failed(mapped);
    this.settle(mapped);
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
    this.hub.deliver({ type: 'released', resource: message.payload });
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
