// Per-shard consumers over a fleet: every shard is consumed by exactly one live worker, shards are
// shared evenly, a dead worker's shards are reclaimed at its lease's expiry, and SIGTERM hands
// shards over at once. Run several copies: `node examples/shard-consumers.mjs [STORE_URL]`.
import { LeaseManager, openStore } from 'leasehold';

const store = await openStore(process.argv[2]);
const shards = Array.from({ length: 8 }, (_, i) => `orders/shard-${i}`);

const manager = new LeaseManager({
  store,
  resources: shards, // or an async function returning the current set
  ttlMs: 6000,
  reconcileMs: 3000,
  async onAcquired(lease) {
    console.log(`[${manager.owner}] consuming ${lease.resource} (token ${lease.token})`);
    while (!lease.signal.aborted) {
      // Consume a batch, committing offsets with lease.token so a stale consumer is refused.
      await new Promise((r) => setTimeout(r, 250));
    }
    console.log(`[${manager.owner}] stopped ${lease.resource}: ${lease.signal.reason.code}`);
  },
});

manager.installShutdownHandlers(); // SIGTERM/SIGINT → graceful handoff
await manager.start();
const seconds = Number(process.env.EXAMPLE_SECONDS ?? 30);
setTimeout(async () => {
  await manager.stop();
  await store.close();
}, seconds * 1000);
