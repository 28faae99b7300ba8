// One OS process opening fresh SQLite files at the same instants as its peers, then acquiring.
// Usage: node fresh-open-worker.mjs <dir> <workerId> <resource,resource,...>
// Round by round: prints "ready", reads a start time (ms since the epoch) from stdin, opens
// <dir>/fresh-<round>.db at that instant, acquires, closes, and prints one JSON line: what it was
// granted and refused, or its error. Ends when stdin does.
import { createInterface } from 'node:readline';
import { SqliteStore } from '../../dist/index.js';

const [dir, id, list] = process.argv.slice(2);
const resources = list.split(',');
const owner = `w${id}`;

// Loaded before the start, so that opening does not begin with each process reading the driver.
await import('better-sqlite3');
const starts = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

for (let round = 0; ; round++) {
  process.stdout.write('ready\n');
  const next = await starts.next();
  if (next.done) break;
  // Spinning, not sleeping: every process is runnable at the start instant, so on a small machine
  // they are preempted in the middle of opening, which is what makes the race show.
  while (Date.now() < Number(next.value));
  const result = { kind: 'result', round, owner, granted: [], refused: [] };
  let store;
  try {
    store = await SqliteStore.open(`${dir}/fresh-${round}.db`);
    // Most in one batch, the last on its own: both paths race the other processes.
    const outcomes = await store.acquireMany(resources.slice(0, -1), owner, 60_000);
    const last = resources.at(-1);
    outcomes.push({ resource: last, lease: await store.tryAcquire(last, owner, 60_000) });
    for (const { resource, lease } of outcomes) {
      if (lease) result.granted.push({ resource, token: lease.token });
      else result.refused.push(resource);
    }
  } catch (error) {
    Object.assign(result, { kind: 'error', code: error.code, message: String(error.message) });
  } finally {
    await store?.close().catch(() => {});
  }
  process.stdout.write(JSON.stringify(result) + '\n');
}
