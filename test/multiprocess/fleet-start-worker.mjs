// One fleet worker process: waits for a shared start instant, opens the (fresh) SQLite file and
// starts a LeaseManager, then prints one JSON line per change of what it holds.
// Usage: node fleet-start-worker.mjs <file> <id> <resourceCount> <startAtMs>
import { LeaseManager, SqliteStore } from '../../dist/index.js';

const [file, id, count, startAt] = process.argv.slice(2);
await import('better-sqlite3');
while (Date.now() < Number(startAt)); // spin: every worker is runnable at the instant
const resources = Array.from({ length: Number(count) }, (_, i) => `shard/${i}`);
const report = (event, extra = {}) =>
  process.stdout.write(`${JSON.stringify({ id, event, held: manager.held().length, ...extra })}\n`);
let manager;
try {
  const store = await SqliteStore.open(file);
  manager = new LeaseManager({
    store,
    owner: `w${id}`,
    resources,
    ttlMs: 3000,
    heartbeatMs: 750,
    reconcileMs: 1500,
    settleMs: 400,
  });
  manager.on('acquired', (l) => report('acquired', { resource: l.resource, token: l.token }));
  manager.on('handoff', (l) => report('handoff', { resource: l.resource }));
  manager.on('lost', (l) => report('lost', { resource: l.resource }));
  manager.installShutdownHandlers();
  await manager.start();
  report('started');
} catch (error) {
  process.stdout.write(`${JSON.stringify({ id, event: 'error', message: String(error) })}\n`);
  process.exit(1);
}
