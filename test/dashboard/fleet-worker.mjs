// One fleet worker process for the dashboard tests: a LeaseManager on a shared SQLite file that
// prints one JSON line when it has started and one per lease it acquires or loses.
// Usage: node fleet-worker.mjs <file> <owner> <resourceCount>
import { LeaseManager, SqliteStore } from '../../dist/index.js';

const [file, owner, count] = process.argv.slice(2);
const resources = Array.from(
  { length: Number(count) },
  (_, i) => `job/${String(i).padStart(2, '0')}`,
);
const report = (event, extra = {}) =>
  process.stdout.write(`${JSON.stringify({ owner, event, ...extra })}\n`);
try {
  const store = await SqliteStore.open(file);
  const manager = new LeaseManager({
    store,
    owner,
    resources,
    ttlMs: 2000,
    heartbeatMs: 500,
    reconcileMs: 1000,
    settleMs: 300,
  });
  manager.on('acquired', (l) => report('acquired', { resource: l.resource, token: l.token }));
  manager.on('lost', (l) => report('lost', { resource: l.resource }));
  manager.installShutdownHandlers();
  await manager.start();
  report('started');
} catch (error) {
  report('error', { message: String(error) });
  process.exit(1);
}
