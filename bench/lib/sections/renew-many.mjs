// renewMany of 1,000 / 10,000 / 100,000 held leases in one call: wall time, CPU time of this
// process, its RSS and how much the call grew it, and the longest event-loop stall meanwhile; then
// releaseMany of the same. On Redis the peers renew and release the same number of locks, one
// call per lock (they have no batch call).
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import Redlock from 'redlock';
import { measure, round1 } from '../measure.mjs';
import { PEER_NOTES } from '../contenders/redis.mjs';
import { sizesFor } from '../sizes.mjs';

const TTL_MS = 60_000;
const CHUNK = 10_000; // LIMITS.batchMaxSize: the most one acquireMany takes

export async function renewMany({ store, server, libs, quick, log }) {
  const { lib } = libs[0];
  const reps = quick ? 1 : 3;
  const { sizes, skipped } = sizesFor('renew-many', store, quick);
  const rows = skipped
    ? [{ section: 'renew-many', store, skipped: skipped.sizes, why: skipped.why }]
    : [];
  for (const size of sizes) {
    const s = await lib.openStore(server.url(`rm_${size}`));
    try {
      const leases = await acquireAll(s, size);
      const renewals = [];
      for (let i = 0; i < reps; i++) {
        const m = await measure(() => s.renewMany(leases, TTL_MS));
        if (m.result.some((l) => l === null)) throw new Error('renewMany refused a held lease');
        renewals.push(m);
      }
      const best = renewals.sort((a, b) => a.wallMs - b.wallMs)[Math.floor(reps / 2)];
      const released = await measure(() => s.releaseMany(leases));
      const row = {
        section: 'renew-many',
        store,
        contender: 'leasehold',
        leases: size,
        wallMs: round1(best.wallMs),
        cpuMs: round1(best.cpuMs),
        rssMB: round1(best.rssMB),
        rssGrowthMB: round1(best.rssGrowthMB),
        stallMs: round1(best.stallMs),
        releaseManyMs: round1(released.wallMs),
        runs: reps,
      };
      log(
        `${size}: renewMany ${row.wallMs} ms (cpu ${row.cpuMs} ms, stall ${row.stallMs} ms), releaseMany ${row.releaseManyMs} ms`,
      );
      rows.push(row);
    } finally {
      await s.close();
    }
    if (store === 'redis' && (!quick || size <= 10_000))
      rows.push(...(await redisPeers(server, size, log)));
  }
  return rows;
}

async function acquireAll(store, size) {
  const leases = [];
  for (let from = 0; from < size; from += CHUNK) {
    const names = Array.from({ length: Math.min(CHUNK, size - from) }, (_, i) => `r/${from + i}`);
    const outcomes = await store.acquireMany(names, 'bench', TTL_MS);
    for (const o of outcomes) {
      if (!o.lease) throw new Error(`acquireMany refused ${o.resource ?? 'a resource'}`);
      leases.push(o.lease);
    }
  }
  return leases;
}

/** redis-semaphore and redlock keeping `size` locks: one refresh / extend call per lock. */
async function redisPeers(server, size, log) {
  const redis = new Redis({ port: server.port, host: '127.0.0.1' });
  const rows = [];
  try {
    const mutexes = Array.from(
      { length: size },
      (_, i) => new Mutex(redis, `rm-rs-${size}/${i}`, { lockTimeout: TTL_MS, refreshInterval: 0 }),
    );
    await Promise.all(mutexes.map((m) => m.acquire()));
    // What its own refresh timer calls for each lock (there is no public method for it).
    const renewed = await measure(() => Promise.all(mutexes.map((m) => m._refresh())));
    const released = await measure(() => Promise.all(mutexes.map((m) => m.release())));
    rows.push(peerRow('redis-semaphore', size, renewed, released));

    const redlock = new Redlock([redis], { retryCount: 0 });
    const locks = await Promise.all(
      Array.from({ length: size }, (_, i) => redlock.acquire([`rm-rl-${size}/${i}`], TTL_MS)),
    );
    const extended = await measure(() => Promise.all(locks.map((l) => l.extend(TTL_MS))));
    const freed = await measure(() => Promise.all(extended.result.map((l) => l.release())));
    rows.push(peerRow('redlock', size, extended, freed));
  } finally {
    redis.disconnect();
  }
  for (const r of rows)
    log(
      `${size}: ${r.contender} renews one call per lock ${r.wallMs} ms (cpu ${r.cpuMs} ms), releases ${r.releaseManyMs} ms`,
    );
  return rows;
}

function peerRow(contender, size, renewed, released) {
  return {
    section: 'renew-many',
    store: 'redis',
    contender,
    role: 'peer',
    note: PEER_NOTES[contender],
    leases: size,
    wallMs: round1(renewed.wallMs),
    cpuMs: round1(renewed.cpuMs),
    rssMB: round1(renewed.rssMB),
    rssGrowthMB: round1(renewed.rssGrowthMB),
    stallMs: round1(renewed.stallMs),
    releaseManyMs: round1(released.wallMs),
    runs: 1,
  };
}
