import { isLive } from '../core/lease.js';
import type { LeaseRecord, LeaseStore } from '../index.js';
import { formatRelative } from './duration.js';
import { keyFields } from './record-key.js';
import { quoted } from './escape.js';

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
  /** The record's lease data, when it has some: a string as is, bytes as base64. */
  data?: string | { base64: string };
}

/** Lease data as JSON can carry it: a string as is, bytes as `{ base64 }`. */
export function dataView(data: LeaseRecord['data']): RecordView['data'] {
  if (data === null || data === undefined) return undefined;
  return typeof data === 'string' ? data : { base64: Buffer.from(data).toString('base64') };
}

/**
 * Lease data for a terminal: a string quoted and escaped, bytes as their size and base64, either
 * cut at `max` characters with the full size said.
 */
export function dataText(data: RecordView['data'], max = 200): string {
  if (data === undefined) return '-';
  const cut = (text: string): string => (text.length > max ? `${text.slice(0, max)}…` : text);
  if (typeof data === 'string') {
    const bytes = Buffer.byteLength(data, 'utf8');
    return data.length > max ? `${quoted(cut(data))} (${bytes} bytes)` : quoted(data);
  }
  const bytes = Buffer.from(data.base64, 'base64').byteLength;
  return `${bytes} bytes, base64 ${cut(data.base64)}`;
}

/**
 * `expired` means a contender may take it now: past `expiresAt` plus the store's allowed skew. For a
 * store-clock store `expiresAt` is on the store's clock, so this is this machine's estimate.
 */
export function viewRecord(record: LeaseRecord, now: number, skewMs: number): RecordView {
  const { resource, owner, token, expiresAt } = record;
  const { name, permit } = keyFields(resource);
  const data = dataView(record.data);
  const withData = data === undefined ? {} : { data };
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
      ...withData,
    };
  const state = isLive(record, now, skewMs) ? 'held' : 'expired';
  return {
    resource,
    name,
    permit,
    owner,
    token,
    expiresAt,
    state,
    expiresInMs: expiresAt - now,
    ...withData,
  };
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
