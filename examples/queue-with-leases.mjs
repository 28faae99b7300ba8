// A queue with leases: the queue delivers "new work" hints at least once — possibly to several
// consumers, possibly twice — and the lease decides who owns each piece of work. Swap the
// in-process queue below for NATS, a PostgreSQL table polled with SKIP LOCKED, SQS…: the lease
// part stays the same. `node examples/queue-with-leases.mjs [STORE_URL]`.
import { EventEmitter } from 'node:events';
import { LeaseClient, openStore } from 'leasehold';

const store = await openStore(process.argv[2]);
const queue = new EventEmitter(); // at-least-once: every consumer hears every hint
const done = new Map(); // the downstream: job → token of the write that completed it

function consumer(name) {
  const client = new LeaseClient({ store, owner: name, ttlMs: 5000 });
  queue.on('job', async (job) => {
    // A hint is not ownership: take the job's lease, or leave the job to whoever has it.
    const lease = await client.tryAcquire(`jobs/${job}`);
    if (!lease) return console.log(`${name}: ${job} is someone else's`);
    try {
      await new Promise((r) => setTimeout(r, 100)); // the work
      if (!done.has(job) && lease.isValid()) {
        done.set(job, lease.token); // a real downstream checks the token (see leasehold's fences)
        console.log(`${name}: did ${job} with token ${lease.token}`);
      }
    } finally {
      await lease.release();
    }
  });
  return client;
}

const clients = [consumer('consumer-a'), consumer('consumer-b'), consumer('consumer-c')];
for (let i = 1; i <= 5; i++) queue.emit('job', `job-${i}`);
queue.emit('job', 'job-3'); // a duplicate delivery
await new Promise((r) => setTimeout(r, 1000));
console.log(`${done.size} jobs done, each exactly once:`, Object.fromEntries(done));
await Promise.all(clients.map((c) => c.close()));
await store.close();
