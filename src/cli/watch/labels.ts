import type { LeaseRecord } from '../../core/lease.js';
import type { ChangeEvent } from '../live/change-event.js';
import type { Tracked } from '../live/tracker.js';
import { arrange, isFairLine, keyFields, parseKey, type Arranged } from '../record-key.js';

/** How a watched record is shown: its label, owner as people read it, and whether it is of a fair line. */
export interface Shown {
  readonly label: string;
  readonly owner: string;
  readonly fairLine: boolean;
}

/**
 * Labels for the records a watch knows of and the records its events name (a removed record is no
 * longer tracked), arranged as `list` arranges them: a name's permits numbered, fair-line places
 * counted over the held ones.
 */
export function labelsFor(
  tracked: Iterable<Tracked>,
  events: readonly ChangeEvent[],
  held: (record: LeaseRecord) => boolean,
): Map<string, Arranged<LeaseRecord>> {
  const records = new Map<string, LeaseRecord>();
  for (const t of tracked) records.set(t.record.resource, t.record);
  for (const e of events) if (!records.has(e.resource)) records.set(e.resource, e);
  return new Map(arrange([...records.values()], held).map((a) => [a.item.resource, a]));
}

/** Whether an event concerns a fair-line record. */
export function isFairLineEvent(event: ChangeEvent): boolean {
  return isFairLine(parseKey(event.resource));
}

/** An event for `--json` readers: `name` and `permit` beside `resource`, the rest unchanged. */
export function eventJson(event: ChangeEvent): object {
  const { type, at, resource, ...rest } = event;
  return { type, at, resource, ...keyFields(resource), ...rest };
}
