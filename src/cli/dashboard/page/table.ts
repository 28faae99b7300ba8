import { byId, el, setText } from './dom.js';
import { model, now, view, type PageRecord } from './model.js';
import { cmp, cmpKeys, isInternal, waiterOf } from './record-keys.js';
import { STATE_ORDER, stateOf } from './record-state.js';
import { forceRelease } from './release.js';
import { colour, fmtMs, fmtTime } from './text.js';

// The lease table, virtualised: only the rows in view exist.

const ROW_H = 26;

function visibleRecord(x: PageRecord): boolean {
  if (!view.internal && isInternal(x.resource)) return false;
  if (view.prefix && x.resource.indexOf(view.prefix) !== 0) return false;
  if (view.owner && x.owner.indexOf(view.owner) < 0) return false;
  return true;
}

// What each row says after its name: 'permit 2' (permit 0 too when the name has others),
// 'fair line, place 3' (counted over the line's live places by ticket), 'fair line, ticket'.
function labelParts(list: readonly PageRecord[]): void {
  const withPermits = new Set<string>();
  const lines = new Map<string, PageRecord[]>();
  list.forEach((x) => {
    if (x.key.kind === 'permit' && x.key.index > 0) withPermits.add(x.key.name);
    if (x.key.kind === 'place' && (x.state === 'held' || x.state === 'at-risk')) {
      if (!lines.has(x.key.name)) lines.set(x.key.name, []);
      lines.get(x.key.name)!.push(x);
    }
  });
  const places = new Map<string, number>();
  lines.forEach((waiting) => {
    waiting.sort((a, b) => cmp(a.owner, b.owner) || cmp(a.resource, b.resource));
    waiting.forEach((x, i) => places.set(x.resource, i + 1));
  });
  list.forEach((x) => {
    if (x.key.kind === 'permit')
      x.part = x.key.index > 0 || withPermits.has(x.key.name) ? `permit ${x.key.index}` : '';
    else if (x.key.kind === 'ticket') x.part = 'fair line, ticket';
    else if (x.key.kind === 'candidate') x.part = `candidate, priority ${x.key.index}`;
    else
      x.part = places.has(x.resource)
        ? `fair line, place ${places.get(x.resource)}`
        : 'fair line, free place';
  });
}

/** Judges, filters, labels and sorts the records into `view.list`, and counts them. */
export function rebuild(): void {
  const t = now();
  const list: PageRecord[] = [];
  model.records.forEach((x) => {
    if (visibleRecord(x)) list.push(x);
  });
  const key = view.sort;
  const dir = view.dir;
  const skewMs = model.settings!.skewMs;
  list.forEach((x) => {
    x.state = stateOf(x, t, skewMs);
  });
  labelParts(list);
  list.sort((a, b) => {
    let d = 0;
    if (key === 'owner') d = cmp(a.owner, b.owner);
    else if (key === 'token') d = a.token - b.token;
    else if (key === 'left')
      d = (a.owner === '' ? Infinity : a.expiresAt) - (b.owner === '' ? Infinity : b.expiresAt);
    else if (key === 'state') d = STATE_ORDER[a.state] - STATE_ORDER[b.state];
    if (Number.isNaN(d)) d = 0;
    return dir * (d || cmpKeys(a.key, b.key));
  });
  view.list = list;
  view.dirty = false;
  let total = 0;
  model.records.forEach((x) => {
    if (view.internal || !isInternal(x.resource)) total++;
  });
  byId('count').textContent =
    list.length === total ? `${total} records` : `${list.length} of ${total} records`;
}

/** One row's element and the parts a refill writes. */
interface Row {
  readonly el: HTMLDivElement;
  readonly nameCell: HTMLDivElement;
  readonly name: Text;
  readonly part: HTMLSpanElement;
  readonly data: HTMLSpanElement;
  readonly ownerCell: HTMLDivElement;
  readonly dot: HTMLSpanElement;
  readonly owner: Text;
  readonly token: HTMLDivElement;
  readonly bar: HTMLDivElement;
  readonly fill: HTMLElement;
  readonly none: HTMLSpanElement;
  readonly badge: HTMLSpanElement;
  readonly release: HTMLButtonElement | null;
}

const pool: Row[] = [];

/** Draws the rows in view of `view.list`. */
export function renderRows(): void {
  const vp = byId('viewport');
  const rows = byId('rows');
  const list = view.list;
  byId('spacer').style.height = `${Math.max(list.length * ROW_H, ROW_H)}px`;
  const first = Math.max(0, Math.floor(vp.scrollTop / ROW_H) - 4);
  const last = Math.min(list.length, first + Math.ceil(vp.clientHeight / ROW_H) + 8);
  rows.style.top = `${first * ROW_H}px`;
  let empty = document.getElementById('empty-note');
  if (list.length === 0) {
    if (!empty) {
      empty = el('div', 'empty');
      empty.id = 'empty-note';
      rows.appendChild(empty);
    }
    empty.textContent =
      model.records.size === 0 ? 'no lease records' : 'no records match the filters';
  } else if (empty) empty.remove();
  const t = now();
  const n = last - first;
  while (pool.length < n) {
    const row = newRow();
    pool.push(row);
    rows.appendChild(row.el);
  }
  pool.forEach((row, i) => {
    if (i < n) {
      row.el.hidden = false;
      fillRow(row, list[first + i]!, t);
    } else row.el.hidden = true;
  });
}

// Rows are made once and refilled, so a button under the pointer survives the redraws.
function newRow(): Row {
  const row = el('div', 'grid row');
  row.setAttribute('role', 'row');
  const nameCell = el('div', 'res');
  const name = document.createTextNode('');
  const part = el('span', 'part');
  const data = el('span', 'data');
  nameCell.append(name, part, data);
  const ownerCell = el('div', 'own');
  const dot = el('span', 'dot');
  const owner = document.createTextNode('');
  ownerCell.append(dot, owner);
  const token = el('div', 'num');
  const left = el('div');
  const bar = el('div', 'bar');
  const fill = el('i');
  bar.appendChild(fill);
  const none = el('span', 'left', '-');
  left.append(bar, none);
  const stateCell = el('div');
  const badge = el('span');
  stateCell.appendChild(badge);
  const act = el('div');
  let release: HTMLButtonElement | null = null;
  if (model.settings!.admin) {
    release = el('button', 'release', 'release');
    release.title = 'force-release this lease (its holder loses it)';
    release.addEventListener('click', () => {
      forceRelease(row.dataset.resource!, Number(row.dataset.token));
    });
    act.appendChild(release);
  }
  row.append(nameCell, ownerCell, token, left, stateCell, act);
  return {
    el: row,
    nameCell,
    name,
    part,
    data,
    ownerCell,
    dot,
    owner,
    token,
    bar,
    fill,
    none,
    badge,
    release,
  };
}

function fillRow(row: Row, x: PageRecord, t: number): void {
  const st = stateOf(x, t, model.settings!.skewMs);
  const { dataset } = row.el;
  dataset.resource = x.resource;
  dataset.owner = x.owner;
  dataset.state = st;
  dataset.token = String(x.token);
  dataset.name = x.key.name;
  dataset.permit = x.key.kind === 'permit' ? String(x.key.index) : '';
  dataset.part = x.part;
  const owner = x.key.kind === 'place' ? waiterOf(x.owner) : x.owner;
  if (row.name.data !== x.key.name) row.name.data = x.key.name;
  setText(row.part, x.part);
  row.part.hidden = x.part === '';
  // The lease data, as the server cut and escaped it; shown as text, never as HTML.
  setText(row.data, x.data === null ? '' : x.data);
  row.data.hidden = x.data === null;
  row.nameCell.title =
    (x.part ? `${x.key.name} (${x.part})` : x.key.name) +
    (x.data === null ? '' : `\ndata: ${x.data}`);
  row.dot.hidden = x.owner === '';
  row.dot.style.background = x.owner === '' ? '' : colour(owner);
  row.owner.data = x.owner === '' ? '-' : owner;
  row.ownerCell.title = x.owner;
  setText(row.token, String(x.token));
  row.bar.hidden = x.owner === '';
  row.none.hidden = x.owner !== '';
  if (x.owner !== '') {
    row.fill.className = `fill-${st}`;
    row.fill.style.width = `${Math.max(0, Math.min(100, ((x.expiresAt - t) / Math.max(x.ttlMs, 1)) * 100))}%`;
    row.bar.title = `expires ${fmtTime(x.expiresAt)} (${x.expiresAt >= t ? `in ${fmtMs(x.expiresAt - t)}` : `${fmtMs(t - x.expiresAt)} ago`})`;
  }
  row.badge.className = `state st-${st}`;
  setText(row.badge, st);
  if (row.release) row.release.hidden = x.owner === '';
}
