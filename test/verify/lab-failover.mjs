// Runs in a network namespace of its own (labCommand): a lab with a primary/replica store of the
// kind in argv[2] (redis, postgres-async, postgres-sync). During a failover — the primary cut off
// from its replica, clients still on it — owner "a" takes a lease; after the replica is promoted
// and has the service address, owner "b" tries the same lease. Prints what each got as JSON.
import { openStore } from '../../dist/index.js';
import { NetLab } from '../../dist/cli/harness/lab/netlab.js';
import { startLabCluster } from '../../dist/cli/harness/lab/lab-cluster.js';

const kind = process.argv[2];
const lab = NetLab.open();
const outcome = {};
try {
  const cluster = await startLabCluster(lab, kind);
  try {
    // A call to a primary that cannot reach its replica may wait on it: 3 s at most.
    const url = `${cluster.url}?${kind === 'redis' ? 'commandTimeoutMs' : 'statementTimeoutMs'}=3000`;
    const store = await openStore(url);
    const failingOver = cluster.failover(2500);
    await new Promise((r) => setTimeout(r, 300)); // the cut is in place, the primary still serves
    outcome.first = await store
      .tryAcquire('job', 'a', 60_000)
      .then((lease) => (lease ? { token: lease.token } : { refused: true }))
      .catch((error) => ({ error: error.code ?? error.message }));
    await failingOver;
    outcome.failover = 'done';
    const after = await openStore(url);
    outcome.second = await after
      .tryAcquire('job', 'b', 60_000)
      .then((lease) => (lease ? { token: lease.token } : { refused: true }))
      .catch((error) => ({ error: error.code ?? error.message }));
    await Promise.allSettled([store.close(), after.close()]);
  } finally {
    await cluster.stop();
  }
} finally {
  lab.close();
}
process.stdout.write(`${JSON.stringify(outcome)}\n`);
