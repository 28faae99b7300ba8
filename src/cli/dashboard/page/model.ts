import type { LeaseState } from '../../live/lease-state.js';
import type { ChangeEvent, FleetView, PageSettings, WireSpan } from './messages.js';
import type { RecordKey } from './record-keys.js';

/** A record as the page keeps it, with what the last rebuild of the table said of it. */
export interface PageRecord {
  readonly resource: string;
  readonly owner: string;
  readonly token: number;
  readonly expiresAt: number;
  readonly ttlMs: number;
  /** The lease data as the server cut and escaped it, or `null`. */
  readonly data: string | null;
  readonly key: RecordKey;
  /** The state at the last rebuild. */
  state: LeaseState;
  /** What the row says after the name ('permit 2', 'fair line, place 3'), or ''. */
  part: string;
}

/** What the server streamed: the records, spans and events, and the offset to its clock. */
export const model = {
  settings: null as PageSettings | null,
  /** The server's clock minus this one's. */
  offset: 0,
  records: new Map<string, PageRecord>(),
  spans: new Map<string, readonly WireSpan[]>(),
  events: [] as readonly ChangeEvent[],
  fleet: null as FleetView | null,
  error: null as string | null,
};

/** How the table is sorted and filtered, and the rows it lists (rebuilt when `dirty`). */
export const view = {
  sort: 'resource',
  dir: 1,
  prefix: '',
  owner: '',
  internal: false,
  list: [] as PageRecord[],
  dirty: true,
};

/** Now on the server's clock. */
export function now(): number {
  return Date.now() + model.offset;
}
