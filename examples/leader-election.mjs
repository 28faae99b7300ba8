// Leader election: one process at a time is the leader; when it dies or steps down another takes
// over. Run several copies: `node examples/leader-election.mjs [STORE_URL]`.
import { elect, openStore } from 'leasehold';

const store = await openStore(process.argv[2]);

const election = elect({
  store,
  name: 'billing-scheduler',
  ttlMs: 6000,
  onElected(lease) {
    console.log(`elected with token ${lease.token}; leading until demoted`);
    const timer = setInterval(() => {
      if (lease.isValid()) console.log(`leader work, fenced with token ${lease.token}`);
    }, 1000);
    lease.signal.addEventListener('abort', () => clearInterval(timer));
  },
  onDemoted(reason) {
    console.log(`no longer leader: ${reason}`);
  },
});

const seconds = Number(process.env.EXAMPLE_SECONDS ?? 20);
setTimeout(async () => {
  await election.stop(); // steps down: another candidate takes over at once
  await store.close();
}, seconds * 1000);
