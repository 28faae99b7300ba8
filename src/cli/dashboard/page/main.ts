import { byId } from './dom.js';
import type { Snapshot, Update } from './messages.js';
import { model, view } from './model.js';
import { renderAll } from './render.js';
import { onSnapshot, onUpdate } from './stream.js';
import { rebuild, renderRows } from './table.js';
import { drawTimeline, showTip } from './timeline.js';

// The page's script, bundled into one inline script (scripts/bundle-page.mjs): it keeps the
// records, spans and events the server streams from /events, and redraws the lease table, the
// timeline and the fleet panel. Names only ever reach the DOM through `textContent` and `dataset`,
// never as HTML.

/** Time passes between listings: states and bars are redrawn four times a second. */
setInterval(() => {
  if (!model.settings) return;
  view.dirty = true;
  rebuild();
  renderRows();
  drawTimeline();
}, 250);

document.querySelectorAll<HTMLButtonElement>('.thead button').forEach((b) => {
  b.addEventListener('click', () => {
    const key = b.dataset.sort!;
    view.dir = view.sort === key ? -view.dir : 1;
    view.sort = key;
    document.querySelectorAll<HTMLButtonElement>('.thead button').forEach((o) => {
      delete o.dataset.dir;
    });
    b.dataset.dir = view.dir === 1 ? 'asc' : 'desc';
    view.dirty = true;
    renderAll();
  });
});
const prefix = byId<HTMLInputElement>('f-prefix');
prefix.addEventListener('input', () => {
  view.prefix = prefix.value;
  view.dirty = true;
  byId('viewport').scrollTop = 0;
  renderAll();
});
const owner = byId<HTMLInputElement>('f-owner');
owner.addEventListener('input', () => {
  view.owner = owner.value;
  view.dirty = true;
  byId('viewport').scrollTop = 0;
  renderAll();
});
const internal = byId<HTMLInputElement>('f-internal');
internal.addEventListener('change', () => {
  view.internal = internal.checked;
  view.dirty = true;
  renderAll();
});
byId('t-window').addEventListener('change', drawTimeline);
byId('viewport').addEventListener('scroll', renderRows);
byId('timeline').addEventListener('mousemove', showTip);
byId('timeline').addEventListener('mouseleave', () => {
  byId('tip').hidden = true;
});
window.addEventListener('resize', drawTimeline);

const source = new EventSource('/events');
source.addEventListener('snapshot', (e) => onSnapshot(JSON.parse(e.data as string) as Snapshot));
source.addEventListener('update', (e) => onUpdate(JSON.parse(e.data as string) as Update));
source.onopen = () => {
  byId('conn').textContent = 'live';
  byId('conn').className = 'meta ok';
};
source.onerror = () => {
  byId('conn').textContent = 'reconnecting…';
  byId('conn').className = 'meta bad';
};
