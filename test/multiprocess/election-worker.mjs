// One election candidate process on a shared SQLite file: campaigns with a priority and prints one
// JSON line per event (`elected`, `renewed`, `aborted` when its term's signal fires, `demoted`),
// with the time on this machine's clock; SIGTERM stops it gracefully.
// Usage: node election-worker.mjs <file> <owner> <priority> <holdOffMs>
import { elect, SqliteStore } from '../../dist/index.js';

const [file, owner, priority, holdOffMs] = process.argv.slice(2);
const report = (event, extra = {}) =>
  process.stdout.write(`${JSON.stringify({ owner, event, at: Date.now(), ...extra })}\n`);
try {
  const store = await SqliteStore.open(file);
  const election = elect({
    store,
    name: 'scheduler',
    owner,
    ttlMs: 3000,
    heartbeatMs: 500,
    priority: Number(priority),
    holdOffMs: Number(holdOffMs),
    onElected: (lease) => {
      report('elected', { token: lease.token });
      lease.on('renewed', () => report('renewed', { token: lease.token }));
      lease.signal.addEventListener('abort', () => report('aborted', { token: lease.token }));
    },
    onDemoted: (reason) => report('demoted', { reason }),
    onError: (error) => report('error', { message: String(error) }),
  });
  report('started');
  process.once('SIGTERM', () => {
    void election.stop().then(async () => {
      await store.close();
      process.exit(0);
    });
  });
} catch (error) {
  report('error', { message: String(error) });
  process.exit(1);
}
