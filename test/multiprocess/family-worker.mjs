// One OS process contending for a counting lease or for all-or-nothing groups on a shared store.
// Prints one JSON line per event as it happens (stdout to a pipe is synchronous on Linux, so a
// process killed with SIGKILL has printed everything it believed up to its death).
// Usage: node family-worker.mjs <storeUrl> <workerId> permits <name> <N> <durationMs>
//        node family-worker.mjs <storeUrl> <workerId> groups <a,b,c,...> <size> <durationMs>
import { LeaseClient, openStore } from '../../dist/index.js';
import { hostNow, workerClock } from '../../dist/cli/harness/host-clock.js';

const [url, id, mode, what, count, durationMs] = process.argv.slice(2);
// Every process records on the host's CLOCK_MONOTONIC (as verify's workers do): instants from
// different processes compare exactly, and the client's deadlines are on that clock too.
const wall = hostNow;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const say = (line) => process.stdout.write(JSON.stringify(line) + '\n');

const store = await openStore(url);
const client = new LeaseClient({
  store,
  owner: `w${id}`,
  ttlMs: 600,
  heartbeatMs: 150,
  clock: workerClock(0),
});
const stopAt = Date.now() + Number(durationMs);

/** Reports every belief of `lease`: its start, each later deadline, and its end. */
function follow(lease) {
  const base = { key: lease.key, name: lease.resource, permit: lease.permit, token: lease.token };
  say({ kind: 'start', ...base, owner: lease.owner, at: wall(), until: until(lease) });
  lease.on('renewed', () => say({ kind: 'until', ...base, until: until(lease) }));
  lease.on('lost', () => say({ kind: 'end', ...base, at: wall(), how: 'lost' }));
}
const until = (lease) => lease.validUntil;

async function permits() {
  while (Date.now() < stopAt) {
    let lease;
    try {
      lease = await client.acquire(what, { permits: Number(count), waitMs: 1500 });
    } catch (error) {
      say({
        kind: error.code === 'LEASE_UNAVAILABLE' ? 'timeout' : 'error',
        message: String(error),
      });
      continue;
    }
    follow(lease);
    await sleep(Math.random() < 0.3 ? 100 + Math.random() * 300 : Math.random() * 30);
    // Belief ends when release is called (markReleased comes first), so the end is said before.
    say({ kind: 'end', key: lease.key, token: lease.token, at: wall(), how: 'released' });
    await lease.release().catch((error) => say({ kind: 'error', message: String(error) }));
  }
}

async function groups() {
  const names = what.split(',');
  let won = 0;
  while (Date.now() < stopAt) {
    // A random subset in a random order: groups cross each other all the time.
    const shuffled = [...names].sort(() => Math.random() - 0.5).slice(0, Number(count));
    let group;
    try {
      group = await client.acquireAll(shuffled, { waitMs: 1500 });
    } catch (error) {
      say({
        kind: error.code === 'LEASE_UNAVAILABLE' ? 'timeout' : 'error',
        message: String(error),
      });
      continue;
    }
    won++;
    for (const lease of group.leases) follow(lease);
    say({ kind: 'group', resources: group.resources, at: wall() });
    await sleep(Math.random() * 40);
    for (const lease of group.leases)
      say({ kind: 'end', key: lease.key, token: lease.token, at: wall(), how: 'released' });
    await group.release().catch((error) => say({ kind: 'error', message: String(error) }));
  }
  say({ kind: 'won', count: won });
}

await (mode === 'permits' ? permits() : groups());
await client.close();
await store.close();
say({ kind: 'done' });
