import { byId } from './dom.js';
import { model, view } from './model.js';
import { renderFleet } from './fleet-panel.js';
import { rebuild, renderRows } from './table.js';
import { drawTimeline } from './timeline.js';

function renderHeader(): void {
  const err = byId('error');
  err.hidden = !model.error;
  err.textContent = model.error || '';
}

/** Redraws everything (the table rebuilt first when `view.dirty`); nothing before the snapshot. */
export function renderAll(): void {
  if (!model.settings) return;
  if (view.dirty) rebuild();
  renderRows();
  drawTimeline();
  renderFleet();
  renderHeader();
}
