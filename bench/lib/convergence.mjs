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
