// Counting leases: acquire → release of one of 5 permits of one name, at 1 and 32 in flight, beside
// leasehold's exclusive lease (tryAcquire → release of each worker's own name) on every store and
// redis-semaphore's Semaphore (limit 5) on Redis. Rounds as in the transition section (rounds.mjs):
// turn by turn at 1 in flight, shuffled slices at 32; ratios are taken within a round. Store calls
// and server requests per cycle come from a pass of each contender alone.
import { callsBetween } from '../counting-store.mjs';
import { PERMITS, permitContenders } from '../contenders/permits.mjs';
import { roundTrips, ROUND_TRIP_UNITS } from '../round-trips.mjs';
import { cyclesFor, interleaved, slice, sliced, slicesFor } from '../rounds.mjs';
import { latencies, spread } from '../stats.mjs';

export const PERMIT_IN_FLIGHT = [1, 32];
const TTL_MS = 20_000;
const PLANS = {
  quick: { rounds: 3, interleavedMs: 80, slicedMs: 240, slices: 2, countMs: 100 },
  full: { rounds: 5, interleavedMs: 400, slicedMs: 800, slices: 4, countMs: 300 },
};

export async function permits({ store, server, libs, quick, log }) {
  const plan = quick ? PLANS.quick : PLANS.full;
  const maxInFlight = Math.max(...PERMIT_IN_FLIGHT);
  const list = permitContenders({ store, server, lib: libs[0].lib, ttlMs: TTL_MS, maxInFlight });
  const opened = [];
  const probe = await roundTrips(store, server);
  const rows = [];
  try {
    for (const c of list) opened.push(await c.open());
    // Every worker's records made once, one at a time (32 permit waiters at once would time the
    // store's list calls, not the cycle).
    for (const o of opened) for (let w = 0; w < maxInFlight; w++) await o.cycle(w);
    for (const inFlight of PERMIT_IN_FLIGHT) {
      try {
        const made = await level({ store, server, list, opened, probe, plan, inFlight });
        for (const row of made)
          log(
            `${inFlight} in flight  ${row.contender.padEnd(20)} ${row.rate.median} cycles/s, ` +
              `p50 ${row.latencyMs?.p50} ms p99 ${row.latencyMs?.p99} ms, ` +
              `${row.storeCallsPerCycle ?? '—'} calls, ${row.roundTripsPerCycle} requests per cycle` +
              (row.vsPeer ? `  ÷ redis-semaphore ${row.vsPeer.median}` : '') +
              (row.vsExclusive ? `  ÷ exclusive ${row.vsExclusive.median}` : ''),
          );
        rows.push(...made);
      } catch (error) {
        // Said in the table, not skipped: the other level's rows still stand.
        const failed = String(error.message ?? error);
        log(`${inFlight} in flight failed: ${error.stack ?? error}`);
        rows.push({ section: 'permits', store, inFlight, contender: 'all', failed });
      }
    }
  } finally {
    for (const o of opened) await o.close().catch(() => undefined);
    await probe.close().catch(() => undefined);
  }
  return rows;
}

/** The rounds of one in-flight level: a row per contender. */
async function level({ store, server, list, opened, probe, plan, inFlight }) {
  const counted = [];
  for (const o of opened) counted.push(await countedPass(o, inFlight, plan.countMs, probe));
  const results = list.map(() => []);
  const cycles = inFlight === 1 ? await cyclesFor(opened, plan.interleavedMs) : 0;
  const slices = inFlight === 1 ? 0 : await slicesFor(opened, inFlight, plan);
  for (let round = 0; round < plan.rounds; round++) {
    const got =
      inFlight === 1
        ? await interleaved(opened, cycles, round, { keepTimes: true })
        : await sliced(opened, {
            inFlight,
            ms: plan.slicedMs,
            slices,
            seed: round,
            serverPid: server.pid,
            keepTimes: true,
          });
    got.forEach((g, k) => results[k].push(g));
  }
  const how =
    inFlight === 1
      ? { rounds: plan.rounds, cyclesPerRound: cycles }
      : { rounds: plan.rounds, secondsPerRound: plan.slicedMs / 1000, slices };
  return rowsOf({ store, list, results, counted, inFlight, how });
}

/** One contender alone for `ms`: its store calls and the server's requests per cycle. */
async function countedPass(opened, inFlight, ms, probe) {
  const calls0 = opened.calls?.();
  const requests0 = await probe.read();
  const { cycles } = await slice(opened, inFlight, ms);
  const requests = (await probe.read()) - requests0;
  return {
    storeCalls: calls0 ? callsBetween(calls0, opened.calls()) / cycles : null,
    requests: requests / cycles,
  };
}

function rowsOf({ store, list, results, counted, inFlight, how }) {
  const at = (role) => list.findIndex((c) => c.role === role);
  const within = (k, base) =>
    base < 0 || base === k
      ? null
      : spread(
          results[k].map((r, i) => r.rate / results[base][i].rate),
          3,
        );
  const round2 = (x) => (x === null || !Number.isFinite(x) ? null : Math.round(x * 100) / 100);
  return list.map((c, k) => ({
    section: 'permits',
    store,
    inFlight,
    permits: c.role === 'exclusive' ? 1 : PERMITS,
    contender: c.name,
    role: c.role,
    describe: c.describe,
    note: c.note ?? null,
    how,
    rate: spread(
      results[k].map((r) => r.rate),
      0,
    ),
    latencyMs: latencies(results[k].flatMap((r) => r.times)),
    vsPeer: c.role === 'leasehold' ? within(k, at('peer')) : null,
    vsExclusive: c.role === 'exclusive' ? null : within(k, at('exclusive')),
    clientCpuUs:
      inFlight === 1
        ? null
        : (spread(
            results[k].map((r) => r.clientCpuUs),
            1,
          )?.median ?? null),
    storeCallsPerCycle: round2(counted[k].storeCalls),
    roundTripsPerCycle: round2(counted[k].requests),
    roundTripUnit: ROUND_TRIP_UNITS[store],
    peer: list.some((p) => p.role === 'peer')
      ? undefined
      : 'no semaphore peer runs on this store: beside leasehold’s exclusive lease',
  }));
}
