import { isLive } from '../../core/lease.js';
import type { LeaseStore } from '../../core/store.js';
import type { ChangeEvent } from '../live/change-event.js';
import { LeaseObserver, type ObserverUpdate } from '../live/observer.js';
import { untilSignal } from '../live/until-signal.js';
import { formatDuration } from '../duration.js';
import { quoted, visible } from '../escape.js';
import { colorEnabled } from './color.js';
import { eventLine } from './event-line.js';
import { frameLines } from './frame.js';
import { eventJson, isFairLineEvent, labelsFor } from './labels.js';

export type WatchMode = 'tty' | 'plain' | 'json';

export interface WatchOptions {
  store: LeaseStore;
  /** The store URL, already redacted. */
  storeLabel: string;
  prefix: string;
  pollMs: number;
  mode: WatchMode;
  /** Whether to show records of fair lines (hidden by default). */
  fairLine?: boolean;
  /** Turns an error into the one line to show (password scrubbed). */
  describe: (error: unknown) => string;
  out?: NodeJS.WriteStream;
}

const REDRAW_MS = 250;
const KEEP_EVENTS = 20;

/**
 * Watches until SIGINT or SIGTERM. On a terminal: a table redrawn in place. Piped: one plain line
 * per change (the records present at the start first, as `seen`). `json`: one JSON object per
 * change, and `{ "type": "error", … }` when a listing fails.
 */
export async function runWatch(options: WatchOptions): Promise<void> {
  const out = options.out ?? process.stdout;
  const { mode } = options;
  const observer = new LeaseObserver({
    store: options.store,
    prefix: options.prefix,
    pollMs: options.pollMs,
    historyMs: 0,
  });
  const recent: ChangeEvent[] = [];
  let lastError: string | undefined;
  let drawn = 0;
  const color = mode === 'tty' && colorEnabled(out);
  const plainColor = mode === 'plain' && colorEnabled(out);
  const title = `leasehold watch  ${visible(options.storeLabel)}${options.prefix ? `  prefix ${quoted(options.prefix)}` : ''}  polling every ${formatDuration(options.pollMs)}${options.store.capabilities.watch ? ' + watch' : ''}`;

  const draw = (): void => {
    const lines = frameLines({
      title,
      tracked: observer.tracker.tracked.values(),
      events: recent.filter((e) => e.type !== 'seen'),
      now: Date.now(),
      skewMs: options.store.maxClockSkewMs,
      error: lastError,
      columns: out.columns ?? 80,
      rows: out.rows ?? 24,
      color,
      fairLine: options.fairLine === true,
    });
    out.write(`${drawn > 0 ? `\x1b[${drawn}F\x1b[J` : ''}${lines.join('\n')}\n`);
    drawn = lines.length;
  };

  const onUpdate = (update: ObserverUpdate): void => {
    if (!update.ok) {
      const text = options.describe(update.error);
      if (mode === 'json') {
        out.write(`${JSON.stringify({ type: 'error', at: update.at, message: text })}\n`);
      } else if (mode === 'plain' && text !== lastError)
        process.stderr.write(`${text}; retrying\n`);
      lastError = text;
      if (mode === 'tty') draw();
      return;
    }
    if (lastError !== undefined && mode === 'plain')
      process.stderr.write('leasehold: the store answers again\n');
    lastError = undefined;
    const events = options.fairLine
      ? update.events
      : update.events.filter((e) => !isFairLineEvent(e));
    if (mode === 'json') {
      for (const event of events) out.write(`${JSON.stringify(eventJson(event))}\n`);
    } else if (mode === 'plain') {
      if (events.length === 0) return;
      const now = Date.now();
      const skew = options.store.maxClockSkewMs;
      const labels = labelsFor(observer.tracker.tracked.values(), events, (r) =>
        isLive(r, now, skew),
      );
      // The records present at the start come in the order `list` shows them.
      const order = new Map([...labels.keys()].map((resource, i) => [resource, i]));
      const rank = (e: ChangeEvent): number => (e.type === 'seen' ? order.get(e.resource)! : -1);
      const lines = events.some((e) => e.type === 'seen')
        ? [...events].sort((a, b) => rank(a) - rank(b))
        : events;
      for (const event of lines)
        out.write(`${eventLine(event, plainColor, labels.get(event.resource)?.label)}\n`);
    } else {
      recent.push(...events);
      if (recent.length > KEEP_EVENTS) recent.splice(0, recent.length - KEEP_EVENTS);
      draw();
    }
  };
  observer.onUpdate(onUpdate);
  let timer: NodeJS.Timeout | undefined;
  if (mode === 'tty') {
    out.write('\x1b[?25l');
    timer = setInterval(draw, REDRAW_MS);
  }
  try {
    await observer.start();
    await untilSignal();
  } finally {
    clearInterval(timer);
    await observer.stop();
    if (mode === 'tty') out.write('\x1b[?25h');
  }
}
