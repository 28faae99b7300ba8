import { byId } from './dom.js';
import type { WireSpan } from './messages.js';
import { model, now, view } from './model.js';
import { cmp, cmpKeys, isInternal, keyLabel, parseKey } from './record-keys.js';
import { colour, fmtMs, fmtTime } from './text.js';

// The ownership timeline: one lane per resource, or per owner when there are many, drawn on a
// canvas; hover shows who held it, with which token, from when to when.

const LANE_H = 16;
const AXIS_H = 18;
const LABEL_W = 170;
const MAX_RESOURCE_LANES = 40;
const MAX_LANES = 80;

interface Lane {
  readonly label: string;
  readonly kind: 'resource' | 'owner';
  readonly spans: readonly { readonly r: string; readonly s: WireSpan }[];
}

/** The lanes last drawn, for the tooltip. */
let lanes: Lane[] = [];

function buildLanes(): Lane[] {
  let names: string[] = [];
  model.spans.forEach((_s, r) => names.push(r));
  names = names.filter((r) => {
    if (!view.internal && isInternal(r)) return false;
    if (view.prefix && r.indexOf(view.prefix) !== 0) return false;
    if (!view.owner) return true;
    return model.spans.get(r)!.some((s) => s[0].indexOf(view.owner) >= 0);
  });
  names.sort((a, b) => cmpKeys(parseKey(a), parseKey(b)));
  if (names.length <= MAX_RESOURCE_LANES) {
    byId('lanes-note').textContent = 'one lane per resource';
    return names.map((r) => ({
      label: keyLabel(r),
      kind: 'resource',
      spans: model.spans.get(r)!.map((s) => ({ r, s })),
    }));
  }
  const byOwner = new Map<string, { r: string; s: WireSpan }[]>();
  names.forEach((r) => {
    model.spans.get(r)!.forEach((s) => {
      if (view.owner && s[0].indexOf(view.owner) < 0) return;
      if (!byOwner.has(s[0])) byOwner.set(s[0], []);
      byOwner.get(s[0])!.push({ r, s });
    });
  });
  const owners = Array.from(byOwner.keys()).sort(cmp);
  byId('lanes-note').textContent =
    `one lane per owner (${names.length} resources)` +
    (owners.length > MAX_LANES ? `; first ${MAX_LANES} owners` : '');
  return owners
    .slice(0, MAX_LANES)
    .map((o) => ({ label: o, kind: 'owner', spans: byOwner.get(o)! }));
}

/** Redraws the timeline for the window chosen, up to now. */
export function drawTimeline(): void {
  const canvas = byId<HTMLCanvasElement>('timeline');
  const wrap = byId('timeline-wrap');
  lanes = buildLanes();
  const width = Math.max(300, wrap.clientWidth);
  const height = AXIS_H + Math.max(1, lanes.length) * LANE_H + 4;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.height = `${height}px`;
  const g = canvas.getContext('2d')!;
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, width, height);
  g.font = '11px system-ui, sans-serif';
  const span = Number(byId<HTMLSelectElement>('t-window').value);
  const t1 = now();
  const t0 = t1 - span;
  const plotW = width - LABEL_W - 8;
  const x = (t: number): number => LABEL_W + ((Math.max(t0, Math.min(t1, t)) - t0) / span) * plotW;
  g.fillStyle = '#6b7385';
  for (let k = 0; k <= 6; k++) {
    const tx = t0 + (span * k) / 6;
    const px = x(tx);
    g.fillRect(px, AXIS_H - 4, 1, 4);
    g.fillText(k === 6 ? 'now' : `-${fmtMs(t1 - tx)}`, Math.min(px + 2, width - 30), 11);
  }
  if (lanes.length === 0) {
    g.fillText('no ownership seen yet', LABEL_W, AXIS_H + 12);
    return;
  }
  lanes.forEach((lane, i) => {
    const y = AXIS_H + i * LANE_H;
    g.fillStyle = i % 2 ? '#f7f8fa' : '#eef0f3';
    g.fillRect(LABEL_W, y, plotW, LANE_H - 2);
    g.fillStyle = '#1d2330';
    const label = lane.label.length > 26 ? `${lane.label.slice(0, 25)}…` : lane.label;
    g.fillText(label, 4, y + 11);
    lane.spans.forEach(({ s }) => {
      const end = s[3] === null ? t1 : s[3];
      if (end < t0) return;
      const a = x(s[2]);
      const b = Math.max(x(end), a + 1);
      g.fillStyle = colour(s[0], lane.kind === 'owner' ? 0.55 : 1);
      g.fillRect(a, y + 1, b - a, LANE_H - 4);
      if (s[2] >= t0) {
        g.fillStyle = '#1d2330';
        g.fillRect(a, y, 2, LANE_H - 2);
      }
      if (s[4] === 'expired') {
        g.fillStyle = '#d64545';
        g.fillRect(b - 3, y, 3, LANE_H - 2);
      }
    });
  });
}

/** The tooltip for the point under the pointer: who held the lane's leases then. */
export function showTip(ev: MouseEvent): void {
  const tip = byId('tip');
  const canvas = byId('timeline');
  const rect = canvas.getBoundingClientRect();
  const px = ev.clientX - rect.left;
  const py = ev.clientY - rect.top;
  const lane = lanes[Math.floor((py - AXIS_H) / LANE_H)];
  const width = rect.width;
  const plotW = width - LABEL_W - 8;
  if (!lane || px < LABEL_W) {
    tip.hidden = true;
    return;
  }
  const span = Number(byId<HTMLSelectElement>('t-window').value);
  const t1 = now();
  const t = t1 - span + ((px - LABEL_W) / plotW) * span;
  const hits = lane.spans.filter(({ s }) => s[2] <= t && (s[3] === null ? t1 : s[3]) >= t);
  let lines: string[];
  if (lane.kind === 'resource') {
    lines = [`${lane.label}  at ${fmtTime(t)}`];
    if (hits.length === 0) lines.push('nobody held it');
    hits.forEach((item) => lines.push(spanText(item.s)));
  } else {
    lines = [`${lane.label}  at ${fmtTime(t)}`, `${hits.length} lease(s) held`];
    hits.slice(0, 8).forEach((item) => lines.push(`${keyLabel(item.r)}  token ${item.s[1]}`));
    if (hits.length > 8) lines.push('…');
  }
  tip.textContent = lines.join('\n');
  tip.hidden = false;
  tip.style.left = `${Math.min(px + 12, width - 260)}px`;
  tip.style.top = `${py + 14}px`;
}

function spanText(s: WireSpan): string {
  return (
    `owner ${s[0]}  token ${s[1]}\nfrom ${fmtTime(s[2])}` +
    (s[3] === null ? ' (still held)' : ` to ${fmtTime(s[3])} (${s[4]})`)
  );
}
