// A program whose only work is a started LeaseManager (or election) on SQLite: it must stay up
// until stopped, unless `unref` is asked for. Usage: node keep-alive-worker.mjs FILE manager|elect [unref]
import { LeaseManager, SqliteStore, elect } from '../../dist/index.js';

const [file, kind, unref] = process.argv.slice(2);
const store = await SqliteStore.open(file);
if (kind === 'manager') {
  const manager = new LeaseManager({
    store,
    resources: ['job/a', 'job/b'],
    ttlMs: 2000,
    settleMs: 0,
  });
  manager.installShutdownHandlers();
  if (unref) manager.unref();
  await manager.start();
  console.log(`started ${manager.held().length}`);
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
