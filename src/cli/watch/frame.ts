import type { ChangeEvent } from '../live/change-event.js';
import { leaseState, type LeaseState } from '../live/lease-state.js';
import type { Tracked } from '../live/tracker.js';
import { formatDuration } from '../duration.js';
import { arrange } from '../record-key.js';
import { COLORS, paint } from './color.js';
import { eventLine } from './event-line.js';

export interface FrameInput {
  readonly title: string;
  readonly tracked: Iterable<Tracked>;
  readonly events: readonly ChangeEvent[];
  readonly now: number;
  readonly skewMs: number;
  readonly error: string | undefined;
  readonly columns: number;
  readonly rows: number;
  readonly color: boolean;
  /** Whether to show records of fair lines (as part of their name). */
  readonly fairLine?: boolean;
}

const BAR = 10;
const EVENT_LINES = 5;

/**
 * The live table for a terminal: a title, one line per record (as many as fit; names with an
 * expired or at-risk record first, a name's permits together after its own record), then the
 * latest events. Every line fits `columns`, so moving the cursor up by the line count redraws the
 * frame in place.
 */
export function frameLines(input: FrameInput): string[] {
  const { now, skewMs, color } = input;
  const width = Math.max(40, input.columns - 1);
  const states = [...input.tracked].map((t) => ({
    record: t.record,
    state: leaseState(t.record, now, skewMs, t.ttlEstimateMs),
    ttl: t.ttlEstimateMs,
  }));
  const arranged = arrange(
    states.map((s) => ({ ...s, resource: s.record.resource, owner: s.record.owner })),
    (s) => s.state === 'held' || s.state === 'at-risk',
  ).filter((a) => input.fairLine === true || a.fairLine === undefined);
  // The most urgent state among a name's records places the whole name.
  const rank = new Map<string, number>();
  for (const a of arranged)
    rank.set(a.key.name, Math.min(rank.get(a.key.name) ?? 3, ORDER[a.item.state]));
  const order = new Map(arranged.map((a, i) => [a, i]));
  arranged.sort(
    (a, b) => rank.get(a.key.name)! - rank.get(b.key.name)! || order.get(a)! - order.get(b)!,
  );
  const views = arranged.map((a) => ({ ...a.item, label: a.label, shownOwner: a.owner }));
  const counts = new Map<LeaseState, number>();
  for (const v of views) counts.set(v.state, (counts.get(v.state) ?? 0) + 1);
  const summary = (['held', 'at-risk', 'expired', 'released'] as const)
    .map((s) => `${counts.get(s) ?? 0} ${s}`)
    .join(', ');
  const events = input.events.slice(-EVENT_LINES);
  const labels = new Map(arranged.map((a) => [a.item.resource, a.label]));
  const room = Math.max(1, input.rows - 5 - (events.length > 0 ? events.length + 1 : 0));
  const shown = views.slice(0, room);
  const resW = Math.min(40, Math.max(8, ...shown.map((v) => v.label.length)));
  const ownW = Math.min(24, Math.max(5, ...shown.map((v) => v.shownOwner.length)));
  const fit = (text: string, w: number): string =>
    text.length <= w ? text.padEnd(w) : `${text.slice(0, w - 1)}…`;
  const lines = [
    cut(`${paint(color, input.title, COLORS.bold)}`, width, color),
    cut(
      `${views.length} records: ${summary}${input.error ? `  ${paint(color, input.error, COLORS.expired)}` : ''}`,
      width,
      color,
    ),
    `${fit('RESOURCE', resW)}  ${fit('OWNER', ownW)}  ${'TOKEN'.padStart(7)}  ${'LEFT'.padEnd(BAR + 9)}STATE`,
  ];
  for (const v of shown) {
    const r = v.record;
    const left =
      r.owner === ''
        ? '-'.padEnd(BAR + 9)
        : `${bar(r.expiresAt - now, v.ttl, v.state, color)} ${formatDuration(r.expiresAt - now).padStart(7)} `;
    const line = `${fit(v.label, resW)}  ${fit(r.owner === '' ? '-' : v.shownOwner, ownW)}  ${String(r.token).padStart(7)}  ${left}${paint(color, v.state, COLORS[v.state])}`;
    lines.push(cut(line, width, color));
  }
  if (views.length > shown.length)
    lines.push(
      paint(color, `… ${views.length - shown.length} more (narrow with --prefix)`, COLORS.dim),
    );
  if (events.length > 0) {
    lines.push(paint(color, 'recent changes', COLORS.dim));
    for (const e of events)
      lines.push(cut(eventLine(e, color, labels.get(e.resource)), width, color));
  }
  return lines;
}

const ORDER: Record<LeaseState, number> = { expired: 0, 'at-risk': 1, held: 2, released: 3 };

function bar(leftMs: number, ttlMs: number, state: LeaseState, color: boolean): string {
  const n = Math.max(0, Math.min(BAR, Math.round((leftMs / Math.max(1, ttlMs)) * BAR)));
  const filled = '█'.repeat(n);
  return `${paint(color, filled, COLORS[state])}${'·'.repeat(BAR - n)}`;
}

/** Cuts a line to `width` visible characters, keeping colour codes whole. */
function cut(line: string, width: number, color: boolean): string {
  // eslint-disable-next-line no-control-regex -- measuring around SGR sequences
  const plain = line.replace(/\x1b\[[0-9;]*m/g, '');
  if (plain.length <= width) return line;
  if (!color) return `${line.slice(0, width - 1)}…`;
  let out = '';
  let count = 0;
  for (let i = 0; i < line.length && count < width - 1;) {
    // eslint-disable-next-line no-control-regex -- copying SGR sequences whole
    const sgr = /^\x1b\[[0-9;]*m/.exec(line.slice(i));
    if (sgr) {
      out += sgr[0];
      i += sgr[0].length;
    } else {
      out += line[i++];
      count++;
    }
  }
  return `${out}\x1b[0m…`;
}
