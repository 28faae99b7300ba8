// Shard consumers that keep their checkpoint in the lease itself: each shard's position is lease
// data, written under the holder's token, so the next owner resumes exactly where the last one
// stopped — after a crash (from the last checkpoint), a graceful handoff or a join — and a paused
// ex-owner's late checkpoint is refused. Run several copies:
// `node examples/shard-checkpoints.mjs [STORE_URL]` (a store that keeps lease data).
import { LeaseManager, openStore } from 'leasehold';

const store = await openStore(process.argv[2]);
const shards = Array.from({ length: 4 }, (_, i) => `events/shard-${i}`);
const BATCH = 5; // records per checkpoint

const manager = new LeaseManager({
  store,
  resources: shards,
  ttlMs: 3000,
  reconcileMs: 1000,
  async onAcquired(lease) {
    // Where the last owner stopped: its last checkpoint, handed over with the lease.
    let offset = lease.data === null ? 0 : JSON.parse(lease.data).offset;
    console.log(
      `[${manager.owner}] ${lease.resource} resumes after ${offset} (token ${lease.token})`,
    );
    while (!lease.signal.aborted) {
      const from = offset + 1;
      const to = offset + BATCH;
      await new Promise((r) => setTimeout(r, 50)); // process records from … to
      if (lease.signal.aborted) break; // stopped mid-batch: the next owner redoes it
      try {
        await lease.writeData(JSON.stringify({ offset: to }));
      } catch (error) {
        console.log(`[${manager.owner}] ${lease.resource} checkpoint refused: ${error.code}`);
        break;
      }
      offset = to;
      console.log(`checkpoint ${lease.resource} ${from}-${to} token ${lease.token}`);
    }
  },
});

manager.installShutdownHandlers(); // SIGTERM/SIGINT → graceful handoff
await manager.start();
const seconds = Number(process.env.EXAMPLE_SECONDS ?? 30);
setTimeout(async () => {
  await manager.stop();
  await store.close();
}, seconds * 1000);
