import type { Snapshot, Update, WireRecord, WireSpan } from './messages.js';
import { model, view } from './model.js';
import { parseKey } from './record-keys.js';
import { renderAll } from './render.js';

/** The events the page keeps. */
const EVENT_LOG = 500;

function putRecord(w: WireRecord): void {
  model.records.set(w[0], {
    resource: w[0],
    owner: w[1],
    token: w[2],
    expiresAt: w[3],
    ttlMs: w[4],
    data: w[6],
    key: parseKey(w[0]),
    // Judged by the page at the next rebuild, as time passes; the server's judgement is not kept.
    state: 'released',
    part: '',
  });
}

function putSpans(spans: Readonly<Record<string, readonly WireSpan[]>>): void {
  Object.keys(spans).forEach((r) => {
    const list = spans[r]!;
    if (list.length === 0) model.spans.delete(r);
    else model.spans.set(r, list);
  });
}

/** The first message on a connection (and after each reconnect): replaces everything. */
export function onSnapshot(m: Snapshot): void {
  model.settings = m.settings;
  model.offset = m.serverNow - Date.now();
  model.records = new Map();
  model.spans = new Map();
  m.records.forEach(putRecord);
  putSpans(m.spans);
  model.events = m.events.slice();
  model.fleet = m.fleet;
  model.error = m.error;
  view.dirty = true;
  renderAll();
  document.body.dataset.ready = '1';
}

/** A message after a listing: what changed. */
export function onUpdate(m: Update): void {
  model.offset = m.serverNow - Date.now();
  m.records.forEach(putRecord);
  m.removed.forEach((r) => model.records.delete(r));
  putSpans(m.spans);
  if (m.events.length) {
    model.events = model.events.concat(m.events);
    if (model.events.length > EVENT_LOG) model.events = model.events.slice(-EVENT_LOG);
  }
  model.fleet = m.fleet;
  model.error = m.error;
  view.dirty = true;
  renderAll();
}
