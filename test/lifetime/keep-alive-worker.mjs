// A program whose only work is a started LeaseManager, an election or a client holding an
// auto-renewed lease, on SQLite: it must stay up until stopped or released, unless `unref` is
// asked for. `manager-loud` holds 2,000 leases and prints a line for each it releases.
// Usage: node keep-alive-worker.mjs FILE manager|manager-loud|elect|client|client-release [unref]
import { LeaseClient, LeaseManager, SqliteStore, elect } from '../../dist/index.js';

const [file, kind, unref] = process.argv.slice(2);
const store = await SqliteStore.open(file);
if (kind.startsWith('manager')) {
  const loud = kind === 'manager-loud';
  const manager = new LeaseManager({
    store,
    resources: loud ? Array.from({ length: 2000 }, (_, i) => `job/${i}`) : ['job/a', 'job/b'],
    ttlMs: 2000,
    settleMs: 0,
  });
  if (loud)
    manager.on('released', (lease) =>
      process.stdout.write(`released ${lease.resource} ${'.'.repeat(100)}\n`),
    );
  manager.installShutdownHandlers();
  if (unref) manager.unref();
  await manager.start();
  console.log(`started ${manager.held().length}`);
} else if (kind.startsWith('client')) {
  const client = new LeaseClient({ store, ttlMs: 2000 });
  if (unref) client.unref();
  const lease = await client.tryAcquire('job/a');
  process.once('SIGTERM', () => void lease.release().then(() => console.log('released')));
  console.log(`holding ${lease.token}`);
  // Released after a while: nothing else is left to keep the process up.
  if (kind === 'client-release') setTimeout(() => void lease.release(), 300).unref();
} else {
  const election = elect({
    store,
    name: 'solo',
    ttlMs: 2000,
    onElected: () => console.log('elected'),
  });
  process.once('SIGTERM', () => void election.stop().then(() => console.log('stopped')));
  if (unref) election.unref();
  console.log('campaigning');
}
