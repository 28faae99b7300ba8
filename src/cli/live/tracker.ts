import { sameData } from '../../core/lease-data.js';
import { isLive, type LeaseRecord } from '../../core/lease.js';
import { HANDOFF_WINDOW_MS, type ChangeEvent, type Span } from './change-event.js';

/** What the tracker knows of one resource. */
export interface Tracked {
  record: LeaseRecord;
  /** The longest time left seen on the current grant: a lower bound of its TTL. */
  ttlEstimateMs: number;
  /** Whether the current grant is held in this tracker's view (not yet seen released or expired). */
  live: boolean;
}

interface Ended {
  owner: string;
  token: number;
  how: 'released' | 'expired';
  at: number;
}

/** What one listing changed. */
export interface TrackerUpdate {
  readonly events: ChangeEvent[];
  /** Resources whose record changed (or appeared, or went). */
  readonly changed: Set<string>;
  /** Resources whose spans changed. */
  readonly spansChanged: Set<string>;
  /** Resources whose record is gone from the store. */
  readonly removed: string[];
}

/** Spans kept per resource at most, whatever the history window. */
const MAX_SPANS = 64;

/**
 * Turns successive complete listings of a store (or of one prefix) into change events and an
 * ownership history: spans per resource over the last `historyMs`. Pure: the caller passes the
 * records and the time, so the rules are tested without a store.
 */
export class LeaseTracker {
  readonly tracked = new Map<string, Tracked>();
  readonly spans = new Map<string, Span[]>();
  private readonly ended = new Map<string, Ended>();
  private primed = false;

  constructor(
    private readonly skewMs: number,
    private readonly historyMs: number,
  ) {}

  /** Applies one complete listing taken at `now`. */
  apply(records: readonly LeaseRecord[], now: number): TrackerUpdate {
    const update: TrackerUpdate = {
      events: [],
      changed: new Set(),
      spansChanged: new Set(),
      removed: [],
    };
    const present = new Set<string>();
    for (const record of records) {
      present.add(record.resource);
      this.applyOne(record, now, update);
    }
    for (const [resource, tracked] of this.tracked) {
      if (present.has(resource)) continue;
      const { record } = tracked;
      if (tracked.live) {
        const expired = now >= record.expiresAt;
        this.end(
          record,
          expired ? 'expired' : 'released',
          expired ? record.expiresAt : now,
          update,
        );
      }
      this.tracked.delete(resource);
      update.removed.push(resource);
      update.changed.add(resource);
      update.events.push(event('removed', record, now));
    }
    this.primed = true;
    this.prune(now, update);
    return update;
  }

  private applyOne(record: LeaseRecord, now: number, update: TrackerUpdate): void {
    const { resource } = record;
    const prev = this.tracked.get(resource);
    const left = record.expiresAt - now;
    if (!prev) {
      const live = isLive(record, now, this.skewMs);
      this.tracked.set(resource, { record, ttlEstimateMs: Math.max(0, left), live });
      update.changed.add(resource);
      if (!this.primed) {
        update.events.push(event('seen', record, now));
        if (live) this.open(record, now, update);
      } else if (record.owner !== '') {
        if (live) this.grant(record, now, update);
      } else {
        update.events.push(event('released', record, now));
      }
      return;
    }
    const old = prev.record;
    prev.record = record;
    if (
      old.expiresAt !== record.expiresAt ||
      old.owner !== record.owner ||
      !sameData(old.data ?? null, record.data ?? null)
    )
      update.changed.add(resource);
    if (record.token === old.token && record.owner === old.owner) {
      prev.ttlEstimateMs = Math.max(prev.ttlEstimateMs, left);
      const live = isLive(record, now, this.skewMs);
      if (prev.live && !live) {
        prev.live = false;
        this.end(old, 'expired', Math.min(now, record.expiresAt + this.skewMs), update);
      } else if (!prev.live && live) {
        prev.live = true;
        update.events.push(event('renewed', record, now));
        this.open(record, now, update);
        update.changed.add(resource);
      }
      return;
    }
    // A new grant, or the same grant released.
    if (prev.live) {
      // Taken over while we still saw it held: only a release (between two listings) frees a live record.
      const how =
        isLive(old, now, this.skewMs) || record.token === old.token ? 'released' : 'expired';
      this.end(old, how, how === 'expired' ? old.expiresAt + this.skewMs : now, update);
    }
    prev.ttlEstimateMs = Math.max(0, left);
    prev.live = false;
    if (record.owner === '') {
      if (record.token !== old.token) update.events.push(event('released', record, now));
      return;
    }
    prev.live = isLive(record, now, this.skewMs);
    if (prev.live) this.grant(record, now, update);
  }

  /** A grant seen for the first time after the first listing: acquired, or handed off. */
  private grant(record: LeaseRecord, now: number, update: TrackerUpdate): void {
    const before = this.ended.get(record.resource);
    const previous = before ? { previousOwner: before.owner, previousToken: before.token } : {};
    const handoff =
      before !== undefined &&
      before.how === 'released' &&
      before.owner !== record.owner &&
      now - before.at <= HANDOFF_WINDOW_MS;
    update.events.push({ ...event(handoff ? 'handoff' : 'acquired', record, now), ...previous });
    this.open(record, now, update);
    update.changed.add(record.resource);
  }

  private open(record: LeaseRecord, now: number, update: TrackerUpdate): void {
    update.spansChanged.add(record.resource);
    const list = this.spans.get(record.resource) ?? [];
    const last = list.at(-1);
    if (last && last.to === null) {
      last.to = now;
      last.end = 'replaced';
    }
    list.push({ owner: record.owner, token: record.token, from: now, to: null, end: null });
    if (list.length > MAX_SPANS) list.splice(0, list.length - MAX_SPANS);
    this.spans.set(record.resource, list);
  }

  private end(
    record: LeaseRecord,
    how: 'released' | 'expired',
    at: number,
    update: TrackerUpdate,
  ): void {
    const span = this.spans.get(record.resource)?.at(-1);
    if (span && span.to === null && span.token === record.token) {
      update.spansChanged.add(record.resource);
      span.to = Math.max(span.from, at);
      span.end = how;
    }
    this.ended.set(record.resource, { owner: record.owner, token: record.token, how, at });
    update.events.push(event(how, record, at));
    update.changed.add(record.resource);
  }

  /** Drops spans that ended before the history window, and what is left of removed resources. */
  private prune(now: number, update: TrackerUpdate): void {
    const horizon = now - this.historyMs;
    for (const [resource, list] of this.spans) {
      const keep = list.filter((s) => s.to === null || s.to >= horizon);
      if (keep.length === list.length) continue;
      update.spansChanged.add(resource);
      if (keep.length === 0) this.spans.delete(resource);
      else this.spans.set(resource, keep);
    }
    for (const [resource, ended] of this.ended)
      if (ended.at < now - HANDOFF_WINDOW_MS && !this.tracked.has(resource))
        this.ended.delete(resource);
  }
}

function event(type: ChangeEvent['type'], record: LeaseRecord, at: number): ChangeEvent {
  const { resource, owner, token, expiresAt } = record;
  return { type, at, resource, owner, token, expiresAt };
}
