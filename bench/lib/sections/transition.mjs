// One transition at the store's own limit: acquire → release cycles on one key per worker, for
// leasehold, the bare compare-and-set of the same shape with a fencing token, and the peers on
// that store, at 1 and 32 in flight. Every round runs all of them, rotated (see rounds.mjs); each
// one's rate is divided by the bare compare-and-set's (and by leasehold's) within the same round,
// and the median and range of those ratios are reported.
//
// With 1 in flight the contenders take turns cycle by cycle and the rate is taken at each one's
// median cycle; with 32 each runs in shuffled slices of time, which also give its CPU per cycle
// (here and in the server) and the requests the server got per cycle.
import { CONTENDERS } from '../contenders/index.mjs';
import { cyclesFor, interleaved, sliced, slicesFor } from '../rounds.mjs';
import { spread } from '../stats.mjs';

export const IN_FLIGHT = [1, 32];
const TTL_MS = 20_000;
const PLANS = {
  quick: { rounds: 5, interleavedMs: 120, slicedMs: 400, slices: 4 },
  full: { rounds: 7, interleavedMs: 1500, slicedMs: 2000, slices: 8 },
};

export async function transition({ store, server, libs, quick, log }) {
  const plan = quick ? PLANS.quick : PLANS.full;
  const module = CONTENDERS[store];
  const list = module.contenders({
    server,
    libs,
    ttlMs: TTL_MS,
    maxInFlight: Math.max(...IN_FLIGHT),
  });
  const opened = [];
  const probe = module.probe ? await module.probe(server) : null;
  const rows = [];
  try {
    for (const c of list) opened.push(await c.open());
    // Every worker's key made once, all in flight together.
    const workers = Array.from({ length: Math.max(...IN_FLIGHT) }, (_, w) => w);
    for (const o of opened) await Promise.all(workers.map((w) => o.cycle(w)));
    for (const inFlight of IN_FLIGHT) {
      const results = list.map(() => []);
      const cycles = inFlight === 1 ? await cyclesFor(opened, plan.interleavedMs) : 0;
      const slices = inFlight === 1 ? 0 : await slicesFor(opened, inFlight, plan);
      for (let round = 0; round < plan.rounds; round++) {
        const got =
          inFlight === 1
            ? await interleaved(opened, cycles, round)
            : await sliced(opened, {
                inFlight,
                ms: plan.slicedMs,
                slices,
                seed: round,
                serverPid: server.pid,
                probe: round === 0 ? probe?.read : undefined, // a read can be slow (etcd's /metrics)
              });
        got.forEach((g, k) => results[k].push(g));
      }
      const how =
        inFlight === 1
          ? { rounds: plan.rounds, cyclesPerRound: cycles }
          : { rounds: plan.rounds, secondsPerRound: plan.slicedMs / 1000, slices };
      const made = rowsOf({ store, list, results, inFlight, how });
      for (const row of made)
        log(
          `${inFlight} in flight  ${row.contender.padEnd(16)} ${row.rate.median} cycles/s` +
            (row.vsBare
              ? `  × bare ${row.vsBare.median} (${row.vsBare.min}–${row.vsBare.max})`
              : ''),
        );
      rows.push(...made);
    }
  } finally {
    for (const o of opened) await o.close().catch(() => undefined);
    await probe?.close().catch(() => undefined);
  }
  return rows;
}

function rowsOf({ store, list, results, inFlight, how }) {
  const bare = list.findIndex((c) => c.role === 'bare');
  const leasehold = list.findIndex((c) => c.role === 'leasehold');
  const within = (k, base) =>
    base < 0 || base === k
      ? null
      : spread(
          results[k].map((r, i) => r.rate / results[base][i].rate),
          3,
        );
  const medianOf = (k, field, digits) =>
    spread(
      results[k].map((r) => r[field] ?? NaN),
      digits,
    )?.median ?? null;
  return list.map((c, k) => ({
    section: 'transition',
    store,
    inFlight,
    contender: c.name,
    role: c.role,
    describe: c.describe ?? null,
    note: c.note ?? null,
    how,
    rate: spread(
      results[k].map((r) => r.rate),
      0,
    ),
    meanRate: inFlight === 1 ? medianOf(k, 'mean', 0) : undefined,
    vsBare: within(k, bare),
    vsLeasehold: within(k, leasehold),
    clientCpuUs: medianOf(k, 'clientCpuUs', 1),
    serverCpuUs: medianOf(k, 'serverCpuUs', 1),
    requestsPerCycle: medianOf(k, 'requests', 2),
  }));
}
