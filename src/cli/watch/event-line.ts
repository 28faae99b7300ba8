import type { ChangeEvent } from '../live/change-event.js';
import { labelOf, shownOwner } from '../record-key.js';
import { COLORS, paint } from './color.js';

/**
 * One change as a plain line: `<ISO time>  <type>  <resource>  owner=<owner> token=<n>`, names
 * escaped for a terminal (`visible`), so a name can neither break the line nor move the cursor.
 * With a `label` (the record's, arranged with the rest of its name: `api  permit 2`) the resource
 * shows as that; a fair-line place's owner shows as the waiter.
 */
export function eventLine(event: ChangeEvent, color = false, label?: string): string {
  const type = paint(color, event.type.padEnd(8), COLORS[event.type]);
  const owner = event.owner === '' ? '-' : shownOwner(event.resource, event.owner);
  const resource = label ?? labelOf(event.resource);
  let line = `${new Date(event.at).toISOString()}  ${type}  ${resource}  owner=${owner} token=${event.token}`;
  if (event.previousOwner !== undefined && event.previousOwner !== event.owner)
    line += ` previous=${shownOwner(event.resource, event.previousOwner)}`;
  return line;
}
