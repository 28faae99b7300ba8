import type { ChangeEvent, Span } from '../live/change-event.js';
import { fleetView } from './fleet-view.js';
import { dataText, dataView } from '../format.js';
import { leaseState } from '../live/lease-state.js';
import type { LeaseObserver, ObserverUpdate } from '../live/observer.js';
import type { FleetView, WireRecord } from '../live/wire-types.js';

export type { WireRecord } from '../live/wire-types.js';
/** A span as the page gets it: `[owner, token, from, to, end]`. */
export type WireSpan = [string, number, number, number | null, Span['end']];

/** Settings the page shows and needs. */
export interface PageSettings {
  /** The store URL without credentials. */
  readonly store: string;
  readonly clock: 'store' | 'local';
  readonly skewMs: number;
  readonly pollMs: number;
  /** Whether releases also arrive through the store's `watch`. */
  readonly watch: boolean;
  readonly historyMs: number;
  /** Whether the force-release action is on. */
  readonly admin: boolean;
}

export interface Snapshot {
  readonly type: 'snapshot';
  readonly serverNow: number;
  readonly settings: PageSettings;
  readonly records: WireRecord[];
  readonly spans: Record<string, WireSpan[]>;
  readonly events: ChangeEvent[];
  readonly fleet: FleetView;
  readonly error: string | null;
}

export interface Update {
  readonly type: 'update';
  readonly serverNow: number;
  readonly records: WireRecord[];
  readonly removed: string[];
  readonly spans: Record<string, WireSpan[]>;
  readonly events: ChangeEvent[];
  readonly fleet: FleetView;
  readonly error: string | null;
}

/** Events kept for a page that connects later. */
const EVENT_LOG = 500;

/** Turns an observer's state into what the page is sent: a snapshot on connect, then updates. */
export class Wire {
  private readonly log: ChangeEvent[] = [];

  constructor(
    private readonly observer: LeaseObserver,
    private readonly settings: PageSettings,
    private readonly describeError: (error: unknown) => string,
  ) {}

  snapshot(now: number): Snapshot {
    const { tracker } = this.observer;
    const spans: Record<string, WireSpan[]> = {};
    for (const [resource, list] of tracker.spans) spans[resource] = list.map(wireSpan);
    return {
      type: 'snapshot',
      serverNow: now,
      settings: this.settings,
      records: [...tracker.tracked.keys()].map((r) => this.record(r, now)!),
      spans,
      events: [...this.log],
      fleet: this.fleet(now),
      error: this.errorText(),
    };
  }

  /** The message for one listing; also keeps its events for later snapshots. */
  update(update: ObserverUpdate): Update {
    const now = update.at;
    if (!update.ok) {
      return {
        type: 'update',
        serverNow: now,
        records: [],
        removed: [],
        spans: {},
        events: [],
        fleet: this.fleet(now),
        error: this.describeError(update.error),
      };
    }
    const events = update.events.filter((e) => e.type !== 'seen');
    this.log.push(...events);
    if (this.log.length > EVENT_LOG) this.log.splice(0, this.log.length - EVENT_LOG);
    const spans: Record<string, WireSpan[]> = {};
    const records: WireRecord[] = [];
    for (const resource of update.spansChanged)
      spans[resource] = (this.observer.tracker.spans.get(resource) ?? []).map(wireSpan);
    for (const resource of update.changed) {
      const record = this.record(resource, now);
      if (record) records.push(record);
    }
    return {
      type: 'update',
      serverNow: now,
      records,
      removed: update.removed,
      spans,
      events,
      fleet: this.fleet(now),
      error: null,
    };
  }

  private record(resource: string, now: number): WireRecord | undefined {
    const tracked = this.observer.tracker.tracked.get(resource);
    if (!tracked) return undefined;
    const { record, ttlEstimateMs } = tracked;
    const state = leaseState(record, now, this.settings.skewMs, ttlEstimateMs);
    const data = dataView(record.data);
    return [
      record.resource,
      record.owner,
      record.token,
      record.expiresAt,
      ttlEstimateMs,
      state,
      data === undefined ? null : dataText(data, 80),
    ];
  }

  private fleet(now: number): FleetView {
    return fleetView(this.observer.records(), now, this.settings.skewMs);
  }

  private errorText(): string | null {
    const error = this.observer.lastError;
    return error === undefined ? null : this.describeError(error);
  }
}

function wireSpan(span: Span): WireSpan {
  return [span.owner, span.token, span.from, span.to, span.end];
}
