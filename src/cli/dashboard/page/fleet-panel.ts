import { byId, el } from './dom.js';
import { model, view } from './model.js';
import { isInternal, keyLabel } from './record-keys.js';
import { colour, fmtTime } from './text.js';

/**
 * Redraws the fleet panel: the members with their leases and fair shares (by weight, with the load
 * against the fair load, when their group balances by weight), then the events.
 */
export function renderFleet(): void {
  const f = model.fleet;
  const body = document.querySelector('#members tbody')!;
  body.textContent = '';
  if (!f) return;
  byId('fleet-summary').textContent = `${f.members.length} live members, ${f.leases} live leases`;
  let max = 1;
  let maxLoad = 0;
  f.members.forEach((m) => {
    max = Math.max(max, m.leases, m.fairShare);
    if (m.weighed) maxLoad = Math.max(maxLoad, m.weighed.load, m.weighed.fair);
  });
  f.members.forEach((m) => {
    const tr = el('tr');
    tr.dataset.member = m.id;
    const name = el('td');
    const dot = el('span', 'dot');
    dot.style.background = colour(m.id);
    name.appendChild(dot);
    name.appendChild(document.createTextNode(m.id));
    name.title = `group ${m.group}${m.limit === null ? '' : `, at most ${m.limit} leases`}`;
    tr.appendChild(name);
    const w = m.weighed;
    tr.appendChild(el('td', 'num', w ? `${m.leases} · load ${w.load}` : String(m.leases)));
    tr.appendChild(el('td', 'num', w ? `load ${w.fair}` : String(m.fairShare)));
    if (w?.below) {
      tr.dataset.below = '1';
      name.appendChild(el('span', 'below', ' below its band'));
    }
    const cell = el('td');
    const share = el('div', 'share');
    const fill = el('i');
    const [held, fair, top] = w ? [w.load, w.fair, maxLoad || 1] : [m.leases, m.fairShare, max];
    fill.style.width = `${(held / top) * 100}%`;
    const mark = el('span', 'mark');
    mark.style.left = `${(fair / top) * 100}%`;
    share.title = w
      ? `${m.leases} held, load ${w.load} of a fair load of ${w.fair}${w.below ? ' (below its band: the others hand it some)' : ''}`
      : `${m.leases} held, fair share ${m.fairShare}`;
    share.appendChild(fill);
    share.appendChild(mark);
    cell.appendChild(share);
    tr.appendChild(cell);
    body.appendChild(tr);
  });
  f.others.forEach((o) => {
    const tr = el('tr');
    tr.appendChild(el('td', '', `${o.id} (not a member)`));
    tr.appendChild(el('td', 'num', String(o.leases)));
    tr.appendChild(el('td', 'num', '-'));
    tr.appendChild(el('td'));
    body.appendChild(tr);
  });
  renderEvents();
}

/** The last 60 changes seen (internal records' only when they are shown), newest first. */
function renderEvents(): void {
  const list = byId('events');
  list.textContent = '';
  let shown = 0;
  for (let i = model.events.length - 1; i >= 0 && shown < 60; i--) {
    const e = model.events[i]!;
    if (!view.internal && isInternal(e.resource)) continue;
    shown++;
    const li = el('li');
    li.dataset.type = e.type;
    li.dataset.resource = e.resource;
    li.dataset.owner = e.owner;
    li.dataset.token = String(e.token);
    li.appendChild(el('span', 'left', `${fmtTime(e.at)} `));
    li.appendChild(el('span', `k k-${e.type}`, e.type));
    let text = ` ${keyLabel(e.resource)}  `;
    if (e.type === 'handoff') text += `${e.previousOwner} → ${e.owner}`;
    else if (e.type === 'acquired' && e.previousOwner && e.previousOwner !== e.owner)
      text += `${e.owner} (after ${e.previousOwner})`;
    else text += e.owner || '-';
    text += `  token ${e.token}`;
    li.appendChild(document.createTextNode(text));
    list.appendChild(li);
  }
  if (shown === 0) list.appendChild(el('li', 'left', 'no changes seen yet'));
}
