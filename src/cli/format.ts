import { isLive } from '../core/lease.js';
import type { LeaseRecord, LeaseStore } from '../index.js';
import { formatRelative } from './duration.js';
import { keyFields } from './record-key.js';

export type RecordState = 'held' | 'expired' | 'released';

/** A record as the CLI shows it, judged against this machine's clock at `now`. */
export interface RecordView {
  /** The record key. */
  resource: string;
  /** The name the record belongs to: `resource` itself, or the name of the permit or fair line it is part of. */
  name: string;
  /** Which permit of `name` the record is (0 for the name's own record); `null` for a fair-line record. */
  permit: number | null;
  owner: string;
  token: number;
  expiresAt: number;
  state: RecordState;
  /** `expiresAt − now`; `null` once released. */
  expiresInMs: number | null;
}

/**
 * `expired` means a contender may take it now: past `expiresAt` plus the store's allowed skew. For a
 * store-clock store `expiresAt` is on the store's clock, so this is this machine's estimate.
 */
export function viewRecord(record: LeaseRecord, now: number, skewMs: number): RecordView {
  const { resource, owner, token, expiresAt } = record;
  const { name, permit } = keyFields(resource);
  if (owner === '')
    return {
      resource,
      name,
      permit,
      owner,
      token,
      expiresAt,
      state: 'released',
      expiresInMs: null,
    };
  const state = isLive(record, now, skewMs) ? 'held' : 'expired';
  return { resource, name, permit, owner, token, expiresAt, state, expiresInMs: expiresAt - now };
}

/** `2025-01-01T00:00:00.000Z (in 12.3s)`, or `-` once released. */
export function expiresText(view: RecordView): string {
  if (view.expiresInMs === null) return '-';
  return `${new Date(view.expiresAt).toISOString()} (${formatRelative(view.expiresInMs)})`;
}

/** A line to print under times that came from a store's own clock. */
export function clockNote(store: LeaseStore): string | undefined {
  return store.capabilities.clock === 'store'
    ? "note: expiry times are on the store's clock; state and in/ago compare them with this machine's clock"
    : undefined;
}

/** Left-aligned columns separated by two spaces; numeric columns right-aligned. */
export function table(headers: string[], rows: string[][], numeric: number[] = []): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, i) => (numeric.includes(i) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** `key: value` lines with the values aligned. */
export function fields(pairs: [string, string][]): string {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
  return pairs.map(([k, v]) => `${`${k}:`.padEnd(width)} ${v}`).join('\n');
}
