// One OS process racing for leases on a shared SQLite file; prints one JSON line per tenure.
// Usage: node race-worker.mjs <dbPath> <workerId> <resources> <durationMs>
import { LeaseClient, SqliteStore } from '../../dist/index.js';
import { hostNow, workerClock } from '../../dist/cli/harness/host-clock.js';

const [dbPath, id, resourceCount, durationMs] = process.argv.slice(2);
// Every process records on the host's CLOCK_MONOTONIC (as verify's workers do): instants from
// different processes compare exactly, and the clients' deadlines are on that clock too.
const wall = hostNow;
const clock = workerClock(0);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const store = await SqliteStore.open(dbPath);
const keeper = new LeaseClient({ store, owner: `w${id}`, ttlMs: 300, heartbeatMs: 75, clock });
const quitter = new LeaseClient({
  store,
  owner: `w${id}-q`,
  ttlMs: 200,
  heartbeatMs: 50,
  autoRenew: false,
  clock,
});
// Every lease a client gives up, including a grant the store answered after its validity deadline,
// which the client releases without handing it out (design rule 2): such a grant raised the token
// but is no tenure.
const givenBack = [];
for (const client of [keeper, quitter])
  client.on('released', (lease) =>
    givenBack.push({ kind: 'given-back', resource: lease.resource, token: lease.token }),
  );
const resources = Array.from({ length: Number(resourceCount) }, (_, i) => `res/${i}`);
const stopAt = Date.now() + Number(durationMs);
const out = [];
const pending = [];
let refused = 0;

while (Date.now() < stopAt) {
  const resource = resources[Math.floor(Math.random() * resources.length)];
  const abandon = Math.random() < 0.2;
  const client = abandon ? quitter : keeper;
  if (client.held().some((l) => l.resource === resource)) continue;
  let lease;
  try {
    lease = await client.tryAcquire(resource);
  } catch (error) {
    out.push({ kind: 'error', resource, message: String(error) });
    continue;
  }
  if (!lease) {
    refused++;
    continue;
  }
  const start = wall();
  const record = {
    kind: 'tenure',
    resource,
    owner: lease.owner,
    token: lease.token,
    start,
    end: 0,
    how: '',
  };
  out.push(record);
  if (abandon) {
    // Stops renewing, as a crashed or frozen holder would: belief ends at its deadline.
    record.end = lease.validUntil;
    record.how = 'abandoned';
    continue;
  }
  const holdMs = Math.random() < 0.3 ? 150 + Math.random() * 350 : Math.random() * 20;
  pending.push(
    (async () => {
      await sleep(holdMs);
      const releaseAt = wall();
      record.end = Math.min(releaseAt, lease.validUntil);
      record.how = lease.state === 'lost' ? 'lost' : 'released';
      await lease.release().catch((error) =>
        // A release is one attempt bounded by the TTL: on a loaded machine it may time out, and
        // the lease then lapses on its own. That is slow, not unsafe; anything else is an error.
        out.push({
          kind: /no answer within/.test(error.message) ? 'late-release' : 'error',
          resource,
          message: String(error),
        }),
      );
    })(),
  );
  if (pending.length > 8) await Promise.race(pending.splice(0, 1));
}
await Promise.all(pending);
await keeper.close();
await quitter.close();
await store.close();
out.push({ kind: 'refused', count: refused }, ...givenBack);
process.stdout.write(out.map((r) => JSON.stringify(r)).join('\n') + '\n');
