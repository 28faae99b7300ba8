import type { ChangeEvent } from '../dashboard/change-event.js';
import { visible } from '../escape.js';
import { COLORS, paint } from './color.js';

/**
 * One change as a plain line: `<ISO time>  <type>  <resource>  owner=<owner> token=<n>`, names
 * escaped for a terminal (`visible`), so a name can neither break the line nor move the cursor.
 */
export function eventLine(event: ChangeEvent, color = false): string {
  const type = paint(color, event.type.padEnd(8), COLORS[event.type]);
  const owner = event.owner === '' ? '-' : visible(event.owner);
  let line = `${new Date(event.at).toISOString()}  ${type}  ${visible(event.resource)}  owner=${owner} token=${event.token}`;
  if (event.previousOwner !== undefined && event.previousOwner !== event.owner)
    line += ` previous=${visible(event.previousOwner)}`;
  return line;
}
