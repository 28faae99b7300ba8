// A scheduled job that only one replica runs, however many replicas are deployed.
// Run several copies at once: `node examples/singleton-job.mjs [STORE_URL]` (default: sqlite:./leasehold.db).
import { LeaseClient, openStore } from 'leasehold';

const store = await openStore(process.argv[2]); // or $LEASEHOLD_STORE
const client = new LeaseClient({ store, ttlMs: 10_000 });
const runs = Number(process.env.EXAMPLE_RUNS ?? 3);

async function nightlyReport(signal, lease) {
  for (let step = 1; step <= 3; step++) {
    signal.throwIfAborted(); // the lease was lost: stop before doing more
    console.log(`[${client.owner}] report step ${step}, fencing token ${lease.token}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

for (let run = 0; run < runs; run++) {
  try {
    // waitMs: 0 — if another replica is already running it, skip this tick instead of queueing up.
    await client.withLease('jobs/nightly-report', nightlyReport, { waitMs: 0 });
  } catch (error) {
    if (error.code !== 'LEASE_UNAVAILABLE') throw error;
    console.log(`[${client.owner}] another replica is running the report; skipping`);
  }
  await new Promise((r) => setTimeout(r, 500)); // stand-in for "every night at 02:00"
}
await client.close();
await store.close();
