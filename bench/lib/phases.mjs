// The measured phases of one fleet run. Each phase diffs the workers' cumulative counters between
// its start and its end, so events of one phase never leak into the next.
import { loadavg } from 'node:os';
import { COUNTED } from './counting-store.mjs';
import { evaluate, evaluateReports, firstSaw, scanStore, settledAt } from './convergence.mjs';
import { sleep } from './processes.mjs';

const EVENTS = [
  'acquired',
  'lost',
  'released',
  'handoff',
  'handoffBalance',
  'handoffUnwanted',
  'workFailed',
  'reconcileFailed',
];

/** Event counts summed over every worker's latest report. */
export function eventTotals(reports) {
  const totals = Object.fromEntries(EVENTS.map((e) => [e, 0]));
  for (const report of reports.values())
    for (const e of EVENTS) totals[e] += report?.events[e] ?? 0;
  return totals;
}

const minus = (a, b) => Object.fromEntries(Object.keys(a).map((k) => [k, a[k] - (b[k] ?? 0)]));

/** The latest reconcile error any worker saw, so a failing store shows up in the report. */
function lastErrors(reports) {
  const seen = new Set();
  for (const r of reports.values()) if (r?.lastError) seen.add(r.lastError);
  return [...seen].slice(0, 3);
}

/**
 * Polls workers every `checkMs` until the fleet converges or `timeoutMs` passes since `since`.
 * The store is paged only when the reports say "converged" (to confirm it), every 10 s (for
 * progress) and at the end: a full scan of W records per second would itself load the store.
 * `baseline` is the event totals at the phase start.
 */
export async function awaitConvergence(ctx, { since, baseline }) {
  const { fleet, resources, options, log } = ctx;
  let allHeldMs = null;
  let state = null;
  let convergedMs = null;
  let lastScan = Date.now();
  let lastLog = Date.now();
  const polls = { slowestMs: 0, mostSilent: 0, scanErrors: 0, lastScanError: null };
  while (convergedMs === null && Date.now() - since <= options.timeoutMs) {
    const reports = await fleet.poll();
    polls.slowestMs = Math.max(polls.slowestMs, fleet.lastPoll.slowestMs);
    polls.mostSilent = Math.max(polls.mostSilent, fleet.lastPoll.silent.length);
    const workers = evaluateReports({ reports, live: fleet.live, resources });
    ctx.trace?.(`poll ${JSON.stringify(workers.reported)}`);
    if (workers.allHeld && allHeldMs === null) allHeldMs = Date.now() - since;
    if (workers.balanced || Date.now() - lastScan >= 10_000) {
      lastScan = Date.now();
      state = (await check(ctx, reports, polls)) ?? state;
      // Taken when the check ends: the fleet converged at or before this, within one check period.
      if (state?.converged) convergedMs = Date.now() - since;
      else if (state && Date.now() - lastLog >= 10_000) {
        lastLog = Date.now();
        log(`${((Date.now() - since) / 1000).toFixed(0)} s: ${describeState(state)}`);
      }
    }
    if (convergedMs === null) await sleep(options.checkMs);
  }
  const reports = await fleet.poll();
  if (convergedMs === null) state = (await check(ctx, reports, polls)) ?? state;
  return {
    converged: convergedMs !== null,
    ms: convergedMs,
    timeoutMs: options.timeoutMs,
    allHeldMs,
    events: minus(eventTotals(reports), baseline),
    reached: state,
    loopMaxMs: loopSpread(reports, fleet.live),
    polls,
    liveWorkers: fleet.live.length,
    // Workers that died on their own so far (a failed start, a crash): "converged" is then among
    // fewer workers than the scale asked for.
    workersDied: fleet.failures().length,
    loadavg: loadavg().map((l) => Math.round(l * 100) / 100),
    errors: lastErrors(reports),
  };
}

/**
 * When the fleet settled by the workers' own account (`settledAt`), in ms from `since` (the
 * coordinator's action) and from the membership change as the first worker saw it (its first
 * 'members' event with `members` members; `since` itself where that is the change, as for a
 * graceful leave, whose releases come before its membership goes).
 */
export async function settledByWorkers(ctx, { since, members, changeAt = null }) {
  const { fleet, resources } = ctx;
  const histories = await fleet.history(since - 60_000);
  ctx.trace?.(`histories ${JSON.stringify(histories)}`);
  const live = fleet.live;
  const at = settledAt({ histories, live, resources });
  const saw = firstSaw({ histories, live, members, since });
  const change = changeAt ?? saw;
  return {
    // Managers whose process did not answer in time: their counts are missing, so "not settled".
    unanswered: live.filter((owner) => !histories[owner]),
    settledMs: at === null ? null : Math.max(0, at - since),
    changeSeenMs: saw === null ? null : saw - since,
    fromChangeMs: at === null || change === null ? null : Math.max(0, at - change),
  };
}

/** Pages the store and judges the fleet; `null` when the scan failed. */
async function check(ctx, reports, polls) {
  const scan = await tryScan(ctx, polls);
  if (!scan) return null;
  const state = evaluate({ scan, reports, live: ctx.fleet.live, resources: ctx.resources });
  state.silent = ctx.fleet.lastPoll.silent.length;
  return state;
}

/** The coordinator's scan; a failure (the store overloaded by the fleet) is counted, not fatal. */
async function tryScan({ store, options, listing }, polls) {
  try {
    return await scanStore(store, { pageSize: options.pageSize, state: listing });
  } catch (error) {
    polls.scanErrors++;
    polls.lastScanError = String(error?.message ?? error).slice(0, 300);
    return null;
  }
}

export function describeState(s) {
  return (
    `held ${s.heldLive}/${s.records} records, share ${s.share}, ` +
    `store ${s.store.min}..${s.store.max}, reported ${s.reported.min}..${s.reported.max} (Σ ${s.reported.sum})` +
    (s.silent ? `, ${s.silent} workers silent for 5 s` : '')
  );
}

/**
 * Store calls per minute over a quiet window, split by method, plus RSS, CPU and loop stalls per
 * worker. The coordinator does not touch the store during the window.
 */
export async function measureSteady(ctx) {
  const { fleet, resources, options } = ctx;
  const before = await fleet.poll();
  fleet.broadcast({ type: 'reset-loop' });
  const t0 = Date.now();
  await sleep(options.steadyMs);
  const after = await fleet.poll();
  const windowMs = Date.now() - t0;
  const reply = { slowestMs: fleet.lastPoll.slowestMs, silent: fleet.lastPoll.silent.length };
  const live = fleet.live;
  const perMinute = (n) => Math.round((n * 60_000) / windowMs);
  const calls = Object.fromEntries(COUNTED.map((m) => [m, 0]));
  const errors = Object.fromEntries(COUNTED.map((m) => [m, 0]));
  const items = {};
  for (const owner of live) {
    const [a, b] = [before.get(owner)?.store, after.get(owner)?.store];
    if (!a || !b) continue;
    for (const m of COUNTED) calls[m] += b.calls[m] - a.calls[m];
    for (const m of COUNTED) errors[m] += b.errors[m] - a.errors[m];
    for (const k of Object.keys(b.items)) items[k] = (items[k] ?? 0) + b.items[k] - a.items[k];
  }
  const scanLog = { scanErrors: 0 };
  const scan = await tryScan(ctx, scanLog);
  const state = scan ? evaluate({ scan, reports: after, live, resources }) : null;
  return {
    windowMs,
    callsPerMinute: mapValues(calls, perMinute),
    errorsPerMinute: mapValues(errors, perMinute),
    itemsPerMinute: mapValues(items, perMinute),
    groupsPerMinute: {
      heartbeats: perMinute(calls.renewMany + calls.renew),
      scans: perMinute(calls.list),
      acquires: perMinute(calls.tryAcquire + calls.acquireMany),
      releases: perMinute(calls.releaseMany + calls.release),
    },
    events: minus(eventTotals(after), eventTotals(before)),
    rssMB: spread(live.filter((o) => after.get(o)).map((o) => after.get(o).rss / 2 ** 20)),
    cpuPercent: spread(
      live.map((o) => cpuPercent(before.get(o), after.get(o))).filter((v) => v !== null),
    ),
    loopMaxMs: loopSpread(after, live),
    reply,
    stillConverged: state?.converged ?? null,
    reached: state,
    loadavg: loadavg().map((l) => Math.round(l * 100) / 100),
    errors: lastErrors(after),
  };
}

function cpuPercent(a, b) {
  if (!a || !b || b.at === a.at) return null; // a worker that did not answer in time
  const used = b.cpu.user + b.cpu.system - a.cpu.user - a.cpu.system; // µs
  return (used / 1000 / (b.at - a.at)) * 100;
}

/** Workers that never reported are left out: their loop was blocked for the whole phase. */
function loopSpread(reports, live) {
  return spread(live.filter((o) => reports.get(o)).map((o) => reports.get(o).loopMaxMs));
}

/** min / median / max (and the sum, for CPU across the fleet), rounded for reading. */
export function spread(values) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const round = (v) => Math.round(v * 10) / 10;
  return {
    min: round(sorted[0]),
    median: round(sorted[Math.floor(sorted.length / 2)]),
    max: round(sorted.at(-1)),
    sum: round(sorted.reduce((a, b) => a + b, 0)),
  };
}

function mapValues(object, fn) {
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, fn(v)]));
}
