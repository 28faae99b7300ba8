import { visible } from '../escape.js';
import type { CheckResult, Latencies } from '../harness/checker.js';

const SHOWN = 10;

/** The one line that sums a check up: `SAFE` or `UNSAFE` and what was checked. */
export function verdictLine(result: CheckResult): string {
  const violations =
    result.overlaps.length +
    result.tokenOrder.length +
    result.tooMany.length +
    result.staleAccepted.length +
    result.data.violations.length;
  const what = `${result.beliefs} beliefs, ${result.handovers} handovers, ${result.writes.accepted} writes accepted, ${result.writes.rejected} rejected by the fence`;
  const live =
    result.liveness.length === 0 ? '' : `; liveness: ${result.liveness.length} gaps (see above)`;
  return result.safe
    ? `verdict: SAFE (${what})${live}`
    : `verdict: UNSAFE: ${violations} violations (${what})${live}`;
}

/** The checker's findings as text, ending with the verdict line. */
export function checkText(result: CheckResult, origin = 0): string {
  const t = (ms: number): string => `${((ms - origin) / 1000).toFixed(6)}s`;
  const d = (ms: number): string => `${ms.toFixed(3)} ms`;
  const lines: string[] = [];
  const section = (title: string, items: string[]): void => {
    lines.push(`${items.length === 0 ? 'ok  ' : 'FAIL'}  ${title}`);
    for (const item of items.slice(0, SHOWN)) lines.push(`        ${item}`);
    if (items.length > SHOWN) lines.push(`        ... and ${items.length - SHOWN} more`);
  };
  section(
    result.permits > 1
      ? 'no two owners believed in one permit at once'
      : 'no two owners believed in one resource at once',
    result.overlaps.map(
      (o) =>
        `${visible(o.resource)}: ${visible(o.second.owner)} (token ${o.second.token}) from ${t(o.second.from)} while ${visible(o.first.owner)} (token ${o.first.token}) believed until ${t(o.first.to)}: both for ${d(o.ms)}`,
    ),
  );
  section(
    'tokens strictly increasing across successive owners',
    result.tokenOrder.map(
      (v) =>
        `${visible(v.resource)}: token ${v.after.token} of ${visible(v.after.owner)} (from ${t(v.after.from)}) follows token ${v.before.token} of ${visible(v.before.owner)}`,
    ),
  );
  if (result.permits > 1)
    section(
      `never more than ${result.permits} owners of one name at once (one per permit)`,
      result.tooMany.map(
        (v) =>
          `${visible(v.resource)}: ${v.holders.length} owners at ${t(v.at)}: ${v.holders
            .map((h) => `${visible(h.owner)} (permit ${h.permit}, token ${h.token})`)
            .join(', ')}`,
      ),
    );
  section(
    'no fenced write accepted under a token lower than one already accepted',
    result.staleAccepted.map(
      (s) =>
        `${visible(s.resource)}: write by ${visible(s.owner)} under token ${s.token} at ${t(s.at)} accepted after token ${s.after}`,
    ),
  );
  if (result.data.landed + result.data.refused + result.data.violations.length > 0)
    section(
      `lease data: progress never from a stale token, never backwards (${result.data.landed} writes landed, ${result.data.refused} refused)`,
      result.data.violations.map(
        (v) =>
          `${visible(v.resource)}: ${v.kind}: the grant of ${visible(v.grant.owner)} (token ${v.grant.token}, from ${t(v.grant.from)}) read ${v.grant.read}; ${visible(v.other.owner)} under token ${v.other.token} had ${v.other.n} (at ${t(v.other.at)})`,
      ),
    );
  const bound = result.livenessBoundMs === null ? '' : ` (bound ${d(result.livenessBoundMs)})`;
  lines.push(
    `${result.liveness.length === 0 ? 'ok  ' : 'GAP '}  liveness: no wanted resource left unowned too long while a worker was live${bound}`,
  );
  for (const g of result.liveness.slice(0, SHOWN))
    lines.push(
      `        ${visible(g.resource)}: unowned from ${t(g.from)} to ${t(g.to)} (${d(g.ms)} with a live worker)`,
    );
  lines.push(
    `takeover after kill:  ${latencyText(result.takeover.kill)}`,
    `takeover after stop:  ${latencyText(result.takeover.stop)}`,
    `faults injected: ${
      Object.entries(result.faults)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none'
    }`,
    verdictLine(result),
  );
  return lines.join('\n');
}

export function latencyText(l: Latencies): string {
  if (l.count === 0) return 'no sample';
  const ms = (v: number | null): string => (v === null ? '-' : `${Math.round(v)} ms`);
  return `p50 ${ms(l.p50)}, p99 ${ms(l.p99)}, max ${ms(l.max)} (${l.count} leases)`;
}
