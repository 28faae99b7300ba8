// Graceful shutdown with 1 / 100 / 10,000 leases held: `LeaseClient.close()` and
// `LeaseManager.stop()` (abort every lease's work, wait for it, release everything in one
// `releaseMany`). Also the client's heap per held lease at the largest size.
import { round1 } from '../measure.mjs';
import { sizesFor } from '../sizes.mjs';

const TTL_MS = 60_000;
const CHUNK = 10_000;

export async function stop({ store, server, libs, quick, log }) {
  const { LeaseClient, LeaseManager, openStore } = libs[0].lib;
  const { sizes, skipped } = sizesFor('stop', store, quick);
  const rows = skipped
    ? [{ section: 'stop', store, skipped: skipped.sizes, why: skipped.why }]
    : [];
  for (const size of sizes) {
    const s = await openStore(server.url(`st_${size}`));
    try {
      const names = Array.from({ length: size }, (_, i) => `r/${i}`);
      const client = new LeaseClient({ store: s, owner: `client-${size}`, ttlMs: TTL_MS });
      const heap0 = heapUsed();
      for (let from = 0; from < size; from += CHUNK) {
        const got = await client.tryAcquireMany(names.slice(from, from + CHUNK));
        if (got.some((o) => !o.lease)) throw new Error('tryAcquireMany refused a free resource');
      }
      // Only where many leases outweigh the noise of one collection.
      const heapPerLease =
        size === Math.max(...sizes) && size >= 1000 ? (heapUsed() - heap0) / size : null;
      const closeMs = await ms(() => client.close());

      const manager = new LeaseManager({
        store: s,
        owner: `manager-${size}`,
        resources: names.map((n) => `m/${n}`),
        balance: false,
        settleMs: 0,
        ttlMs: TTL_MS,
        onAcquired: (lease) =>
          new Promise((resolve) => lease.signal.addEventListener('abort', resolve)),
      });
      await manager.start();
      await until(() => manager.held().length === size, 120_000, `the manager to hold ${size}`);
      const stopMs = await ms(() => manager.stop());
      const row = {
        section: 'stop',
        store,
        leases: size,
        clientCloseMs: round1(closeMs),
        managerStopMs: round1(stopMs),
        heapBytesPerLease: heapPerLease === null ? null : Math.round(heapPerLease),
      };
      log(
        `${size} held: client.close() ${row.clientCloseMs} ms, manager.stop() ${row.managerStopMs} ms`,
      );
      rows.push(row);
    } finally {
      await s.close();
    }
  }
  return rows;
}

function heapUsed() {
  globalThis.gc?.();
  return process.memoryUsage().heapUsed;
}

async function ms(fn) {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function until(check, timeoutMs, what) {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
