// Fair waiting on one hot lease: a holder takes the name, then 32 waiters (each its own LeaseClient,
// all on one store) call `acquire(name)` one after another — the next only once the last has
// settled to wait (made its first store calls and has none in flight: in line, or asleep after a
// refused attempt), so arrival order is well defined. Then the holder lets go and every waiter in
// turn holds the lease 3 ms and releases it. The same with `fair: true` and without, in an order
// shuffled every round. Counted per trial: overtakes (grants made while a waiter that arrived
// earlier is still waiting), each waiter's wait from its call to its grant, the handoff from one
// release to the next grant, and the store calls and server requests per grant.
//
// TTL 3 s and heartbeat 200 ms: a waiter in line renews its place and reads the line at every
// heartbeat, and on a store that announces no releases that is how soon it sees its turn.
import { callsBetween, countingStore } from '../counting-store.mjs';
import { roundTrips, ROUND_TRIP_UNITS } from '../round-trips.mjs';
import { latencies, median, shuffled, spread } from '../stats.mjs';

export const FAIR_WAITERS = 32;
const TTL_MS = 3000;
const HEARTBEAT_MS = 200;
const HOLD_MS = 3;
// A trial takes under 5 s on the slowest store here: a waiter still waiting at 15 s is reported.
const WAIT_MS = 15_000;
const PLANS = { quick: { rounds: 1 }, full: { rounds: 3 } };
const MODES = ['fair', 'non-fair'];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function fair({ store, server, libs, quick, log }) {
  const plan = quick ? PLANS.quick : PLANS.full;
  const { lib } = libs[0];
  const shared = await lib.openStore(server.url('fair'));
  const probe = await roundTrips(store, server);
  const client = (owner) => {
    const counting = countingStore(shared);
    const c = new lib.LeaseClient({
      store: counting.store,
      owner,
      ttlMs: TTL_MS,
      heartbeatMs: HEARTBEAT_MS,
    });
    return Object.assign(c, { counting });
  };
  const holder = client('holder');
  const waiters = Array.from({ length: FAIR_WAITERS }, (_, i) => client(`waiter-${i}`));
  const trials = Object.fromEntries(MODES.map((m) => [m, []]));
  try {
    for (let round = 0; round < plan.rounds; round++)
      for (const at of shuffled(MODES.length, round)) {
        const mode = MODES[at];
        const name = `hot/${round}/${mode}`;
        let t;
        try {
          t = await trial({ name, fair: mode === 'fair', holder, waiters, probe });
        } catch (error) {
          // Said in the row, not skipped: the other trials still stand.
          log(`${mode} round ${round} failed: ${error.stack ?? error}`);
          trials[mode].push({ failed: String(error.message ?? error) });
          continue;
        }
        log(
          `${mode} round ${round}: ${t.overtakes} overtakes, wait p50 ${median(t.waits).toFixed(0)} ms, ` +
            `handoff p50 ${median(t.handoffs).toFixed(1)} ms, ${t.callsPerGrant.toFixed(1)} calls per grant, ` +
            `${t.seconds.toFixed(2)} s from the first release`,
        );
        trials[mode].push(t);
      }
  } finally {
    await Promise.all([holder, ...waiters].map((c) => c.close().catch(() => undefined)));
    await shared.close().catch(() => undefined);
    await probe.close().catch(() => undefined);
  }
  const watch = shared.capabilities.watch;
  return MODES.map((mode) => rowOf(store, mode, trials[mode], watch));
}

async function trial({ name, fair, holder, waiters, probe }) {
  const first = await holder.acquire(name, { waitMs: 10_000 });
  const everyone = [holder, ...waiters];
  const calls0 = everyone.map((c) => c.counting.snapshot());
  const requests0 = await probe.read();
  const grants = []; // waiter indexes, in grant order
  const waits = [];
  const handoffs = [];
  let releasedAt = 0;
  const run = async (i) => {
    const t0 = performance.now();
    const lease = await waiters[i].acquire(name, { fair, waitMs: WAIT_MS });
    const now = performance.now();
    grants.push(i);
    waits.push(now - t0);
    handoffs.push(now - releasedAt);
    await sleep(HOLD_MS);
    releasedAt = performance.now();
    await lease.release();
  };
  const runs = [];
  let failure;
  for (let i = 0; i < waiters.length; i++) {
    const calls = total(waiters[i]);
    runs.push(run(i).catch((error) => void (failure ??= error)));
    await settled(waiters[i], calls);
  }
  const t0 = performance.now();
  releasedAt = t0;
  await first.release();
  await Promise.all(runs); // every waiter granted and done, or failed
  if (failure) throw failure;
  const seconds = (performance.now() - t0) / 1000;
  const calls = everyone.reduce(
    (sum, c, k) => sum + callsBetween(calls0[k], c.counting.snapshot()),
    0,
  );
  const requests = (await probe.read()) - requests0;
  return {
    overtakes: overtakes(grants),
    waits,
    handoffs,
    seconds,
    callsPerGrant: calls / waiters.length,
    requestsPerGrant: requests / waiters.length,
  };
}

const total = (client) =>
  Object.values(client.counting.snapshot().calls).reduce((a, b) => a + b, 0);

/** Until `client` has made a store call since `before` calls and has none in flight. */
async function settled(client, before) {
  const end = performance.now() + 10_000;
  do await sleep(1);
  while ((total(client) === before || client.counting.inFlight() > 0) && performance.now() < end);
}

/** Grants made while a waiter that arrived earlier had not been granted yet. */
export function overtakes(grants) {
  let count = 0;
  let nextInOrder = 0;
  const granted = new Set();
  for (const i of grants) {
    granted.add(i);
    if (i !== nextInOrder) count++;
    while (granted.has(nextInOrder)) nextInOrder++;
  }
  return count;
}

function rowOf(store, mode, all, watch) {
  const ts = all.filter((t) => !t.failed);
  const failed = all.find((t) => t.failed)?.failed;
  return {
    section: 'fair',
    store,
    mode,
    waiters: FAIR_WAITERS,
    rounds: ts.length,
    ...(failed
      ? { failed: `${all.length - ts.length} of ${all.length} trials failed: ${failed}` }
      : {}),
    holdMs: HOLD_MS,
    ttlMs: TTL_MS,
    heartbeatMs: HEARTBEAT_MS,
    overtakes: spread(
      ts.map((t) => t.overtakes),
      0,
    ),
    waitMs: latencies(ts.flatMap((t) => t.waits)),
    handoffMs: latencies(ts.flatMap((t) => t.handoffs)),
    storeCallsPerGrant: spread(
      ts.map((t) => t.callsPerGrant),
      1,
    ),
    roundTripsPerGrant: spread(
      ts.map((t) => t.requestsPerGrant),
      1,
    ),
    roundTripUnit: ROUND_TRIP_UNITS[store],
    grantsPerS: spread(
      ts.map((t) => FAIR_WAITERS / t.seconds),
      1,
    ),
    watch,
    note: watch
      ? null
      : `no release notices on this store: a waiter sees its turn at its next heartbeat (${HEARTBEAT_MS} ms)${mode === 'non-fair' ? ' or backoff' : ''}`,
  };
}
