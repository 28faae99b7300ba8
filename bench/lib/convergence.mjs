// "Converged" as the coordinator sees it: every wanted resource held by a live lease of a live
// worker, and every worker's count within ±1 of W/N — in the store (paged list) and in the
// workers' own reports.
import { RESOURCE_PREFIX } from './resources.mjs';

/**
 * Pages through `r/` records and counts live holders per owner. Stores still gaining `after`
 * return the first page again; then (once, remembered on `state`) we fall back to one big list of
 * up to `state.maxLimit` (the library's LIMITS.listMaxLimit).
 */
export async function scanStore(store, { pageSize, state, now = Date.now }) {
  const byOwner = new Map();
  let records = 0;
  const count = (page, at) => {
    for (const r of page) {
      records++;
      if (r.owner !== '' && r.expiresAt >= at)
        byOwner.set(r.owner, (byOwner.get(r.owner) ?? 0) + 1);
    }
  };
  if (state.paging === 'ignored') {
    count(await store.list({ prefix: RESOURCE_PREFIX, limit: state.maxLimit }), now());
    return { records, byOwner };
  }
  let after;
  for (;;) {
    const at = now();
    const page = await store.list({ prefix: RESOURCE_PREFIX, limit: pageSize, after });
    if (after !== undefined && page.length > 0 && page[0].resource <= after) {
      state.paging = 'ignored';
      return scanStore(store, { pageSize, state, now });
    }
    if (after !== undefined) state.paging = 'after';
    count(page, at);
    if (page.length < pageSize) return { records, byOwner };
    after = page.at(-1).resource;
  }
}

const within = (count, share) => Math.abs(count - share) <= 1;

/** The workers' own view (IPC, cheap): how many leases each believes it holds. */
export function evaluateReports({ reports, live, resources }) {
  const share = resources / live.length;
  const reported = live.map((owner) => reports.get(owner)?.held ?? 0);
  const sum = reported.reduce((a, b) => a + b, 0);
  return {
    allHeld: sum === resources,
    balanced: sum === resources && reported.every((n) => within(n, share)),
    reported: { ...spread(reported), sum },
  };
}

/** Where the fleet stands in the store and in the reports, and whether both say "converged". */
export function evaluate({ scan, reports, live, resources }) {
  const share = resources / live.length;
  const storeCounts = live.map((owner) => scan.byOwner.get(owner) ?? 0);
  const heldLive = storeCounts.reduce((a, b) => a + b, 0);
  const allHeld = heldLive === resources;
  const storeBalanced = allHeld && storeCounts.every((n) => within(n, share));
  const workers = evaluateReports({ reports, live, resources });
  const liveSet = new Set(live);
  let foreign = 0; // live leases of workers that left or died
  for (const [owner, n] of scan.byOwner) if (!liveSet.has(owner)) foreign += n;
  return {
    converged: storeBalanced && workers.balanced,
    allHeld,
    heldLive,
    foreign,
    unheld: resources - heldLive - foreign,
    records: scan.records,
    share: Math.round(share * 100) / 100,
    store: spread(storeCounts),
    reported: workers.reported,
  };
}

function spread(counts) {
  return counts.length === 0
    ? { min: 0, max: 0 }
    : { min: Math.min(...counts), max: Math.max(...counts) };
}

/**
 * When the fleet settled, from the workers' own histories (`Fleet.history`): the start of the
 * last stretch, up to the end of the histories, in which the `live` managers' held counts sum to
 * `resources` and each is within ±1 of the share. `null` when the last point is not settled.
 * Each manager's count is what it believes it holds, on its own (the machine's) clock.
 */
export function settledAt({ histories, live, resources }) {
  const share = resources / live.length;
  const points = [];
  live.forEach((owner, i) => {
    for (const [at, n] of histories[owner]?.held ?? []) points.push([at, i, n]);
  });
  points.sort((a, b) => a[0] - b[0]);
  const counts = live.map(() => 0);
  let sum = 0;
  let since = null;
  for (let k = 0; k < points.length;) {
    const at = points[k][0];
    // Every change at one instant before judging: a moment is settled or not as a whole.
    for (; k < points.length && points[k][0] === at; k++) {
      const [, i, n] = points[k];
      sum += n - counts[i];
      counts[i] = n;
    }
    const settled = sum === resources && counts.every((n) => within(n, share));
    if (!settled) since = null;
    else since ??= at;
  }
  return since;
}

/** The first moment a live manager saw `members` members at or after `since` (its 'members' event). */
export function firstSaw({ histories, live, members, since }) {
  let first = null;
  for (const owner of live)
    for (const [at, n] of histories[owner]?.members ?? [])
      if (at >= since && n === members && (first === null || at < first)) first = at;
  return first;
}
