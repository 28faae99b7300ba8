// Lease data: `lease.writeData(value)` of 100 bytes and of LIMITS.dataMaxBytes beside a plain
// `lease.renew()` of the same lease, in rounds whose order rotates, one call in flight; on
// PostgreSQL also beside what users do without lease data — the same 100 bytes written through a
// `PostgresFence` to a table of their own. Then `renewMany` of many held leases carrying 100 bytes
// of data each beside as many without: renewals never rewrite the data, so both should cost the
// same. Store calls and requests per call are counted. Last, the longest event-loop stall (design
// rule 6: a deadline timer must not wait long) while batches of leases carrying LIMITS.dataMaxBytes
// each are acquired (the data handed over), refused (the holders' records read back), listed,
// renewed and released.
import pg from 'pg';
import { callsBetween, countingStore } from '../counting-store.mjs';
import { measure, round1 } from '../measure.mjs';
import { roundTrips, ROUND_TRIP_UNITS } from '../round-trips.mjs';
import { latencies, median, shuffled, spread } from '../stats.mjs';

const TTL_MS = 60_000;
const PLANS = {
  quick: { rounds: 2, ms: 150, min: 3, many: 200 },
  full: { rounds: 4, ms: 1000, min: 5, many: 10_000 },
};
/** Stores whose every renewal is a request per lease (or rewrites the record whole): fewer leases. */
const FEWER = new Set(['dynamodb', 's3', 'nats', 'zookeeper']);

export async function data({ store, server, libs, quick, log }) {
  const plan = quick ? PLANS.quick : PLANS.full;
  const { lib } = libs[0];
  const counting = countingStore(await lib.openStore(server.url('data')));
  if (!counting.store.capabilities.data) {
    await counting.store.close();
    return [{ section: 'data', store, failed: 'the store does not keep lease data' }];
  }
  const client = new lib.LeaseClient({ store: counting.store, owner: 'writer', ttlMs: TTL_MS });
  const probe = await roundTrips(store, server);
  const limit = lib.LIMITS.dataMaxBytes;
  const small = 'x'.repeat(100);
  const big = 'y'.repeat(limit);
  const rows = [];
  let pool;
  try {
    const lease = await client.acquire('data/one');
    const variants = {
      renew: () => lease.renew(),
      'writeData 100 B': () => lease.writeData(small),
      [`writeData ${limit} B`]: () => lease.writeData(big),
    };
    if (store === 'postgres') {
      pool = new pg.Pool({ connectionString: server.base, max: 4 });
      await pool.query(
        'CREATE TABLE IF NOT EXISTS bench_checkpoint (id text PRIMARY KEY, value text NOT NULL)',
      );
      await pool.query(
        `INSERT INTO bench_checkpoint VALUES ('one', '') ON CONFLICT (id) DO NOTHING`,
      );
      const fence = new lib.PostgresFence(pool, { table: 'bench_fence' });
      await fence.init();
      variants['PostgresFence write 100 B (a table of its own)'] = () =>
        fence.write(lease, (tx) =>
          tx.query(`UPDATE bench_checkpoint SET value = $1 WHERE id = 'one'`, [small]),
        );
    }
    const names = Object.keys(variants);
    const sums = Object.fromEntries(
      names.map((n) => [n, { rates: [], times: [], calls: 0, requests: 0, count: 0 }]),
    );
    for (let round = 0; round < plan.rounds; round++) {
      for (const at of shuffled(names.length, round)) {
        const name = names[at];
        const s = sums[name];
        const calls0 = counting.snapshot();
        const requests0 = await probe.read();
        const t0 = performance.now();
        let n = 0;
        while (n < plan.min || performance.now() - t0 < plan.ms) {
          const c0 = performance.now();
          await variants[name]();
          s.times.push(performance.now() - c0);
          n++;
        }
        s.rates.push(n / ((performance.now() - t0) / 1000));
        s.requests += (await probe.read()) - requests0;
        s.calls += callsBetween(calls0, counting.snapshot());
        s.count += n;
      }
    }
    for (const name of names) {
      const s = sums[name];
      const row = {
        section: 'data',
        store,
        kind: 'call',
        call: name,
        rounds: plan.rounds,
        calls: s.count,
        rate: spread(s.rates, 1),
        latencyMs: latencies(s.times),
        storeCallsPerCall: Math.round((s.calls / s.count) * 100) / 100,
        roundTripsPerCall: Math.round((s.requests / s.count) * 10) / 10,
        roundTripUnit: ROUND_TRIP_UNITS[store],
      };
      rows.push(row);
      log(
        `${name}: ${row.rate.median}/s, p50 ${row.latencyMs.p50} ms, ${row.roundTripsPerCall} requests each`,
      );
    }
    await lease.release();
    rows.push(...(await renewManyWithData({ store, counting, plan, small, log })));
    rows.push(...(await batchStalls({ store, raw: counting.store, plan, big, log })));
  } finally {
    await client.close().catch(() => undefined);
    await counting.store.close().catch(() => undefined);
    await probe.close().catch(() => undefined);
    await pool?.end().catch(() => undefined);
  }
  return rows;
}

/** `renewMany` of N held leases with 100 bytes of data each, beside N without, alternating. */
async function renewManyWithData({ store, counting, plan, small, log }) {
  const n = FEWER.has(store) ? Math.min(1000, plan.many) : plan.many;
  const raw = counting.store;
  const take = async (prefix) => {
    const names = Array.from({ length: n }, (_, i) => `${prefix}/${String(i).padStart(5, '0')}`);
    const leases = [];
    for (let i = 0; i < names.length; i += 1000) {
      const outcomes = await raw.acquireMany(names.slice(i, i + 1000), 'renewer', TTL_MS);
      leases.push(...outcomes.map((o) => o.lease));
    }
    return leases;
  };
  const plain = await take('rm/plain');
  let carrying = await take('rm/data');
  for (let i = 0; i < carrying.length; i += 100)
    await Promise.all(carrying.slice(i, i + 100).map((l) => raw.writeData(l, small)));
  carrying = carrying.map((l) => ({ ...l, data: small }));
  const times = { plain: [], data: [] };
  for (let round = 0; round < Math.max(2, plan.rounds); round++) {
    for (const which of round % 2 === 0 ? ['plain', 'data'] : ['data', 'plain']) {
      const t0 = performance.now();
      const renewed = await raw.renewMany(which === 'plain' ? plain : carrying, TTL_MS);
      times[which].push(performance.now() - t0);
      if (renewed.some((l) => l === null)) throw new Error(`renewMany (${which}) lost a lease`);
    }
  }
  const after = await raw.get(carrying[0].resource);
  if (after?.data !== small) throw new Error('renewMany changed the lease data');
  await raw.releaseMany(plain);
  await raw.releaseMany(carrying);
  const row = {
    section: 'data',
    store,
    kind: 'renew-many',
    leases: n,
    plainMs: Math.round(median(times.plain)),
    withDataMs: Math.round(median(times.data)),
    ratio: Math.round((median(times.data) / median(times.plain)) * 100) / 100,
  };
  log(
    `renewMany of ${n}: ${row.plainMs} ms without data, ${row.withDataMs} ms with 100 B each (× ${row.ratio})`,
  );
  return [row];
}

/**
 * The longest stall of the event loop while a batch of leases each carrying `big` (the data limit)
 * goes through the store: every call's work in the process, measured from inside (`measure`), the
 * best of a few rounds (a stall the call causes shows in every round).
 */
async function batchStalls({ store, raw, plan, big, log }) {
  const n = FEWER.has(store) ? Math.min(1000, plan.many) : plan.many;
  const names = Array.from({ length: n }, (_, i) => `bs/${String(i).padStart(5, '0')}`);
  const chunks = (list) =>
    Array.from({ length: Math.ceil(list.length / 1000) }, (_, i) =>
      list.slice(i * 1000, (i + 1) * 1000),
    );
  const acquireAll = async (owner) => {
    const leases = [];
    for (const chunk of chunks(names))
      leases.push(...(await raw.acquireMany(chunk, owner, TTL_MS)).map((o) => o.lease));
    return leases;
  };
  // The records made, each given the data once.
  let seeded = await acquireAll('seed');
  for (let i = 0; i < seeded.length; i += 100)
    await Promise.all(seeded.slice(i, i + 100).map((l) => raw.writeData(l, big)));
  await raw.releaseMany(seeded);
  const stalls = {
    'acquireMany granted': [],
    'acquireMany refused': [],
    list: [],
    renewMany: [],
    releaseMany: [],
  };
  const rounds = Math.max(2, Math.min(3, plan.rounds));
  for (let round = 0; round < rounds; round++) {
    const granted = await measure(() => raw.acquireMany(names, 'holder', TTL_MS));
    const leases = granted.result.map((o) => o.lease);
    if (leases.some((l) => !l || l.data !== big))
      throw new Error('acquireMany did not hand the data over');
    stalls['acquireMany granted'].push(granted.stallMs);
    const refused = await measure(() => raw.acquireMany(names, 'other', TTL_MS));
    if (refused.result.some((o) => o.lease)) throw new Error('acquireMany granted a held lease');
    stalls['acquireMany refused'].push(refused.stallMs);
    const listed = await measure(async () => {
      let count = 0;
      let after;
      for (;;) {
        const page = await raw.list({ prefix: 'bs/', after, limit: 1000 });
        count += page.length;
        if (page.length < 1000) return count;
        after = page[page.length - 1].resource;
      }
    });
    if (listed.result !== n) throw new Error(`list read ${listed.result} of ${n} records`);
    stalls.list.push(listed.stallMs);
    const renewed = await measure(() => raw.renewMany(leases, TTL_MS));
    stalls.renewMany.push(renewed.stallMs);
    const released = await measure(() => raw.releaseMany(renewed.result));
    stalls.releaseMany.push(released.stallMs);
  }
  const row = {
    section: 'data',
    store,
    kind: 'batch-stalls',
    leases: n,
    dataBytes: big.length,
    rounds,
    stallMinMs: Object.fromEntries(
      Object.entries(stalls).map(([k, v]) => [k, round1(Math.min(...v))]),
    ),
  };
  log(
    `${n} leases with ${big.length} B each, longest loop stall (min over ${rounds} rounds): ` +
      Object.entries(row.stallMinMs)
        .map(([k, v]) => `${k} ${v} ms`)
        .join(', '),
  );
  return [row];
}
