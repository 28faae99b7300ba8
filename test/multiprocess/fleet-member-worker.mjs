// One fleet worker process for the membership tests: opens the store at the URL, starts a
// LeaseManager whose scans are a minute apart (so what settles during a test settled from the
// store's announcements, not at a scan), and prints one JSON line per event. SIGTERM stops it.
// Usage: node fleet-member-worker.mjs <storeUrl> <id> <resourceCount>
import { LeaseManager, openStore } from '../../dist/index.js';

const [url, id, count] = process.argv.slice(2);
const resources = Array.from({ length: Number(count) }, (_, i) => `shard/${i}`);
const say = (event, extra = {}) =>
  process.stdout.write(`${JSON.stringify({ id, event, at: Date.now(), ...extra })}\n`);
try {
  const store = await openStore(url);
  const manager = new LeaseManager({
    store,
    owner: `w${id}`,
    resources,
    ttlMs: 6000,
    heartbeatMs: 1500,
    reconcileMs: 60_000,
    settleMs: 300,
  });
  manager.on('acquired', (l) => say('acquired', { resource: l.resource, token: l.token }));
  manager.on('handoff', (l) => say('handoff', { resource: l.resource }));
  manager.on('lost', (l) => say('lost', { resource: l.resource }));
  manager.on('members', (members, share) => say('members', { members: members.length, share }));
  process.on('SIGTERM', () => {
    void manager
      .stop()
      .then(() => store.close())
      .then(() => {
        say('stopped');
        process.exit(0);
      });
  });
  await manager.start();
  say('started');
} catch (error) {
  say('error', { message: String(error) });
  process.exit(1);
}
