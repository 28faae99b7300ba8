// One side of the failover benchmark, in its own process: a LeaseClient that acquires the
// resource when told (waiting as users wait, with `acquire()`), reports when it holds it, and
// releases it when told. Times are wall-clock ms with sub-ms precision, comparable across
// processes on one machine.
import { loadLibrary } from './library.mjs';

const config = JSON.parse(process.argv[2]);
const { LeaseClient, openStore } = await loadLibrary(config.dist);
const now = () => performance.timeOrigin + performance.now();
// Without the coordinator there is nobody to report to: leave rather than linger as an orphan.
process.on('disconnect', () => process.exit(1));

const store = await openStore(config.url);
const client = new LeaseClient({
  store,
  owner: config.owner,
  ttlMs: config.ttlMs,
  heartbeatMs: config.heartbeatMs,
});
let held = null;

process.on('message', (message) => {
  const run = async () => {
    if (message.op === 'acquire') {
      process.send({ type: 'waiting', at: now() });
      held = await client.acquire(config.resource);
      process.send({ type: 'held', at: now(), token: held.token });
    } else if (message.op === 'release') {
      const at = now();
      await held.release();
      held = null;
      process.send({ type: 'released', at, returnedAt: now() });
    }
  };
  run().catch((error) => process.send({ type: 'error', error: String(error.stack ?? error) }));
});
process.send({ type: 'ready' });
