import type { CheckResult } from '../harness/checker.js';
import { escapeHtml } from '../html-escape.js';
import { driftBeyondText, formatRate } from './drift.js';
import type {
  BeliefRecord,
  FaultRecord,
  HistoryRecord,
  RunRecord,
  WriteRecord,
} from '../harness/history-format.js';
import { latencyText, verdictLine } from './verdict-text.js';

const WIDTH = 1100;
const LABEL = 150;
const ROW = 18;

function colour(owner: string, owners: string[]): string {
  const i = owners.indexOf(owner);
  return `hsl(${Math.round((i * 137.5) % 360)} 65% 55%)`;
}

/**
 * A self-contained HTML page: the verdict, then one timeline row per resource with each owner's
 * belief as a coloured bar, faults as marked lines, overlaps in red and rejected writes as ticks.
 */
export function htmlReport(
  records: readonly HistoryRecord[],
  result: CheckResult,
  extra: { notes: string[]; skewBeyond: boolean; driftBeyond?: boolean },
): string {
  const run = records.find((r): r is RunRecord => r.type === 'run');
  const beliefs = records.filter((r): r is BeliefRecord => r.type === 'belief');
  // Clock faults last the whole life of a worker: listed with the faults, not drawn as lines.
  const faults = records.filter(
    (r): r is FaultRecord => r.type === 'fault' && r.kind !== 'skew' && r.kind !== 'drift',
  );
  const rejected = records.filter(
    (r): r is WriteRecord => r.type === 'write' && r.outcome === 'rejected',
  );
  // A loop, not Math.min(...times): a long run has more times than a call can take as arguments.
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const r of records)
    for (const t of r.type === 'belief'
      ? [r.from, r.to]
      : r.type === 'run'
        ? [r.startedAt]
        : [r.at]) {
      if (t < t0) t0 = t;
      if (t > t1) t1 = t;
    }
  const span = Math.max(1, t1 - t0);
  const x = (t: number): number => LABEL + ((t - t0) / span) * (WIDTH - LABEL - 10);
  const resources = [...new Set(beliefs.map((b) => b.resource))].sort();
  const owners = [...new Set(beliefs.map((b) => b.owner))].sort();
  const rowOf = new Map(resources.map((r, i) => [r, i]));
  const top = 20;
  const height = top + resources.length * ROW + 20;
  const parts: string[] = [];
  for (const [r, i] of rowOf)
    parts.push(`<text x="4" y="${top + i * ROW + 13}" class="lbl">${escapeHtml(r)}</text>`);
  for (const b of beliefs) {
    const y = top + rowOf.get(b.resource)! * ROW + 2;
    parts.push(
      `<rect x="${x(b.from).toFixed(1)}" y="${y}" width="${Math.max(1, x(b.to) - x(b.from)).toFixed(1)}" height="${ROW - 4}" fill="${colour(b.owner, owners)}"><title>${escapeHtml(`${b.owner} token ${b.token}: ${((b.from - t0) / 1000).toFixed(3)}s to ${((b.to - t0) / 1000).toFixed(3)}s (${b.how})`)}</title></rect>`,
    );
  }
  for (const o of result.overlaps) {
    const row = rowOf.get(o.resource);
    if (row === undefined) continue;
    parts.push(
      `<rect x="${(x(o.second.from) - 2).toFixed(1)}" y="${top + row * ROW}" width="${Math.max(4, x(o.second.from + o.ms) - x(o.second.from) + 4).toFixed(1)}" height="${ROW}" class="bad"><title>${escapeHtml(`overlap ${o.ms.toFixed(3)} ms: ${o.first.owner} (token ${o.first.token}) and ${o.second.owner} (token ${o.second.token})`)}</title></rect>`,
    );
  }
  for (const w of rejected) {
    const row = rowOf.get(w.resource);
    if (row === undefined) continue;
    parts.push(
      `<line x1="${x(w.at).toFixed(1)}" x2="${x(w.at).toFixed(1)}" y1="${top + row * ROW}" y2="${top + row * ROW + ROW}" class="rej"><title>${escapeHtml(`write by ${w.owner} under token ${w.token} rejected by the fence`)}</title></line>`,
    );
  }
  for (const f of faults) {
    parts.push(
      `<line x1="${x(f.at).toFixed(1)}" x2="${x(f.at).toFixed(1)}" y1="10" y2="${height - 10}" class="fault"/>`,
      `<text x="${x(f.at).toFixed(1)}" y="10" class="flbl">${escapeHtml(`${f.kind} ${f.worker ?? ''}`)}</text>`,
    );
    if (f.until !== undefined)
      parts.push(
        `<rect x="${x(f.at).toFixed(1)}" y="12" width="${Math.max(1, x(f.until) - x(f.at)).toFixed(1)}" height="${height - 24}" class="span"/>`,
      );
  }
  const legend = owners
    .map(
      (o) => `<span class="chip" style="background:${colour(o, owners)}"></span>${escapeHtml(o)}`,
    )
    .join(' ');
  const skews = records
    .filter((r): r is FaultRecord => r.type === 'fault' && r.kind === 'skew')
    .map(
      (r) => `${escapeHtml(r.worker ?? '?')} ${(r.skewMs ?? 0) > 0 ? '+' : ''}${r.skewMs ?? 0} ms`,
    )
    .join(', ');
  const rates = records
    .filter((r): r is FaultRecord => r.type === 'fault' && r.kind === 'drift')
    .map((r) => `${escapeHtml(r.worker ?? '?')} ${formatRate(r.rate ?? 0)}`)
    .join(', ');
  const list = (title: string, items: string[]): string =>
    items.length === 0
      ? ''
      : `<h3>${escapeHtml(title)}</h3><ul>${items
          .slice(0, 50)
          .map((i) => `<li>${escapeHtml(i)}</li>`)
          .join('')}</ul>`;
  const rel = (t: number): string => `${((t - t0) / 1000).toFixed(3)}s`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>leasehold verify report</title>
<style>
body{font:14px system-ui,sans-serif;margin:20px;color:#222}
.safe{color:#080;font-weight:bold}.unsafe{color:#c00;font-weight:bold}
.lbl{font:11px monospace}.flbl{font:10px monospace;fill:#555}
.fault{stroke:#333;stroke-dasharray:3 3}.span{fill:#000;opacity:.06}
.bad{fill:none;stroke:#e00;stroke-width:2}.rej{stroke:#000;stroke-width:1.5}
.chip{display:inline-block;width:12px;height:12px;margin:0 3px 0 10px;vertical-align:middle}
svg{border:1px solid #ddd;background:#fafafa}
</style></head><body>
<h1>leasehold verify</h1>
<p class="${result.safe ? 'safe' : 'unsafe'}">${escapeHtml(verdictLine(result))}</p>
<p>store ${escapeHtml(run?.store ?? '?')} (expiry on the ${escapeHtml(run?.storeClock ?? '?')} clock, maxClockSkewMs ${run?.maxClockSkewMs ?? '?'}), TTL ${run?.ttlMs ?? '?'} ms, ${run?.workers ?? '?'} workers, ${run?.resources ?? '?'} resources, seed ${run?.seed ?? '?'}; times on ${escapeHtml(run?.clock ?? '?')}, error at most ${run?.clockErrorMs ?? '?'} ms, always widening a belief.</p>
${extra.skewBeyond ? `<p class="unsafe">Clock skew went beyond the store's allowance: overlapping beliefs are expected. The fence rejected ${result.writes.rejected} stale writes; ${result.staleAccepted.length} stale writes were accepted.</p>` : ''}
${extra.driftBeyond ? `<p class="unsafe">Clock drift went beyond the allowance of rule 2: ${escapeHtml(driftBeyondText(run?.driftRate ?? 0, run?.ttlMs ?? 0))}; overlapping beliefs are expected. The fence rejected ${result.writes.rejected} stale writes; ${result.staleAccepted.length} stale writes were accepted.</p>` : ''}
<p>takeover after kill: ${escapeHtml(latencyText(result.takeover.kill))}; after graceful stop: ${escapeHtml(latencyText(result.takeover.stop))}</p>
<p>faults: ${escapeHtml(
    Object.entries(result.faults)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ') || 'none',
  )}${skews ? `; clock offsets: ${skews}` : ''}${rates ? `; clock rates: ${rates}` : ''}</p>
${list('notes', extra.notes)}
<h2>Ownership timeline</h2>
<p>One row per resource; a bar is one owner's belief (hover for owner, token and times). Dashed lines: faults (shaded while a pause or stall lasted). Red boxes: two owners believing at once. Black ticks: writes the fence rejected.</p>
<p>${legend}</p>
<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}">${parts.join('')}</svg>
${list(
  'overlaps',
  result.overlaps.map(
    (o) =>
      `${o.resource}: ${o.second.owner} (token ${o.second.token}) from ${rel(o.second.from)} while ${o.first.owner} (token ${o.first.token}) believed until ${rel(o.first.to)} (${o.ms.toFixed(3)} ms)`,
  ),
)}
${list(
  'token order',
  result.tokenOrder.map(
    (v) =>
      `${v.resource}: token ${v.after.token} of ${v.after.owner} follows ${v.before.token} of ${v.before.owner}`,
  ),
)}
${list(
  'more owners than permits',
  result.tooMany.map(
    (v) =>
      `${v.resource}: ${v.holders.length} owners of ${v.permits} permits at ${rel(v.at)}: ${v.holders.map((h) => `${h.owner} (permit ${h.permit}, token ${h.token})`).join(', ')}`,
  ),
)}
${list(
  'stale writes accepted',
  result.staleAccepted.map(
    (s) => `${s.resource}: ${s.owner} token ${s.token} at ${rel(s.at)} after token ${s.after}`,
  ),
)}
${list(
  'liveness gaps',
  result.liveness.map(
    (g) =>
      `${g.resource}: unowned ${rel(g.from)} to ${rel(g.to)} (${g.ms.toFixed(0)} ms with a live worker)`,
  ),
)}
</body></html>
`;
}
