// All-or-nothing groups: `client.acquireAll(names)` → `group.release()` of 2, 10 and 100 free
// resources, one group in flight. Rounds take the sizes in an order shuffled every round; each
// size keeps the same names (made once beforehand). Groups per second, each group's time, the
// store calls a group takes (acquireAll, releaseMany) and the requests the server received for it
// — where the store has no multi-record transaction, or the group outgrows one, the members are
// taken one by one in resource order, and the row says so.
import { callsBetween, countingStore } from '../counting-store.mjs';
import { roundTrips, ROUND_TRIP_UNITS } from '../round-trips.mjs';
import { latencies, shuffled, spread } from '../stats.mjs';

export const GROUP_SIZES = [2, 10, 100];
const TTL_MS = 20_000;
const PLANS = {
  quick: { rounds: 2, ms: 150, minGroups: 2 },
  full: { rounds: 4, ms: 1200, minGroups: 3 },
};

export async function groups({ store, server, libs, quick, log }) {
  const plan = quick ? PLANS.quick : PLANS.full;
  const { lib } = libs[0];
  const counting = countingStore(await lib.openStore(server.url('groups')));
  const client = new lib.LeaseClient({ store: counting.store, owner: 'grouper', ttlMs: TTL_MS });
  const probe = await roundTrips(store, server);
  const atomicMax = counting.store.capabilities.atomicGroupMax;
  const names = Object.fromEntries(
    GROUP_SIZES.map((size) => [
      size,
      Array.from({ length: size }, (_, i) => `g${size}/${String(i).padStart(3, '0')}`),
    ]),
  );
  const sums = Object.fromEntries(
    GROUP_SIZES.map((s) => [s, { rates: [], times: [], calls: 0, requests: 0, groups: 0 }]),
  );
  const cycle = async (size) => {
    const group = await client.acquireAll(names[size], { waitMs: 5000 });
    await group.release();
  };
  try {
    for (const size of GROUP_SIZES) await cycle(size); // every record made once
    for (let round = 0; round < plan.rounds; round++) {
      for (const at of shuffled(GROUP_SIZES.length, round)) {
        const size = GROUP_SIZES[at];
        const s = sums[size];
        const calls0 = counting.snapshot();
        const requests0 = await probe.read();
        const t0 = performance.now();
        let groups = 0;
        while (groups < plan.minGroups || performance.now() - t0 < plan.ms) {
          const c0 = performance.now();
          await cycle(size);
          s.times.push(performance.now() - c0);
          groups++;
        }
        s.rates.push(groups / ((performance.now() - t0) / 1000));
        s.requests += (await probe.read()) - requests0;
        s.calls += callsBetween(calls0, counting.snapshot());
        s.groups += groups;
      }
    }
  } finally {
    await client.close().catch(() => undefined);
    await counting.store.close().catch(() => undefined);
    await probe.close().catch(() => undefined);
  }
  return GROUP_SIZES.map((size) => {
    const s = sums[size];
    const row = {
      section: 'groups',
      store,
      size,
      rounds: plan.rounds,
      groups: s.groups,
      rate: spread(s.rates, 1),
      latencyMs: latencies(s.times),
      storeCallsPerGroup: Math.round((s.calls / s.groups) * 100) / 100,
      roundTripsPerGroup: Math.round((s.requests / s.groups) * 10) / 10,
      roundTripUnit: ROUND_TRIP_UNITS[store],
      atomicGroupMax: atomicMax,
      how: howTaken(size, atomicMax),
    };
    log(
      `${size}: ${row.rate.median} groups/s, p50 ${row.latencyMs.p50} ms, ` +
        `${row.storeCallsPerGroup} store calls and ${row.roundTripsPerGroup} requests per group (${row.how})`,
    );
    return row;
  });
}

function howTaken(size, atomicMax) {
  if (size <= atomicMax) return 'one atomic call';
  if (atomicMax === 0)
    return 'member by member in resource order: the adapter takes no group in one call (atomicGroupMax 0)';
  return `member by member in resource order: beyond the ${atomicMax} one call takes here`;
}
