// A real queue with leases: a NATS JetStream work queue delivers "new work" hints at least once —
// to several consumer processes, twice when a job is sent twice, again when a consumer dies
// before acking — and a lease decides who owns each job. The job's effect is written through a
// fence, so only the current holder's token can write it, and a job is done once.
//
//   node examples/queue-nats.mjs [NATS_URL]        demo: 3 consumer processes, 8 jobs each sent
//                                                  twice, one consumer SIGKILLed in the middle of a job
//   node examples/queue-nats.mjs produce NATS_URL JOBS
//   node examples/queue-nats.mjs consume NATS_URL DB_FILE NAME JOBS
//
// Needs the NATS driver packages: npm install @nats-io/transport-node @nats-io/jetstream @nats-io/kv
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { LeaseClient, SqliteFence, openStore } from 'leasehold';

const STREAM = 'JOBS';
const CONSUMER = 'workers';
const ACK_WAIT_MS = 2000; // an unacked hint comes back after this: the queue's own redelivery
const TTL_MS = 1500; // a dead consumer's lease lapses after this
const WORK_MS = 300;

const [mode, ...args] = process.argv.slice(2);
if (mode === 'produce') await produce(args[0], Number(args[1]));
else if (mode === 'consume') await consume(args[0], args[1], args[2], Number(args[3]));
else await demo(mode ?? 'nats://127.0.0.1:4222');

/** The queue: a work-queue stream (each message goes to one consumer, until acked) and one pull consumer shared by all. */
async function queue(url) {
  const nc = await connect({ servers: new URL(url).host });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: STREAM, subjects: ['jobs.new'], retention: 'workqueue' });
  await jsm.consumers.add(STREAM, {
    durable_name: CONSUMER,
    ack_policy: 'explicit',
    ack_wait: ACK_WAIT_MS * 1_000_000, // nanoseconds
  });
  return { nc, js: jetstream(nc), jsm };
}

/** Sends every job twice in a row: a duplicate hint, as an at-least-once producer may send. */
async function produce(url, jobs) {
  const { nc, js } = await queue(url);
  for (let i = 1; i <= jobs; i++) {
    for (let copy = 0; copy < 2; copy++) await js.publish('jobs.new', `job-${i}`);
  }
  await nc.close();
}

async function consume(url, dbFile, name, jobs) {
  const log = (line) => console.log(`${name}: ${line}`);
  const { nc, js } = await queue(url);
  const consumer = await js.consumers.get(STREAM, CONSUMER);
  // The leases live in a KV bucket of the same NATS; every process here reads one clock.
  const store = await openStore(`${url}?bucket=queue_leases&maxClockSkewMs=100`);
  const client = new LeaseClient({ store, owner: name, ttlMs: TTL_MS });
  // The downstream: a SQLite file shared by every consumer, written through a fence.
  const db = new Database(dbFile, { timeout: 10_000 });
  db.pragma('journal_mode = WAL');
  const fence = new SqliteFence(db);
  await fence.init();
  db.exec(`CREATE TABLE IF NOT EXISTS effects
             (job TEXT PRIMARY KEY, token INTEGER NOT NULL, worker TEXT NOT NULL)`);
  const doneBy = db.prepare('SELECT token FROM effects WHERE job = ?');
  const apply = db.prepare('INSERT INTO effects (job, token, worker) VALUES (?, ?, ?)');
  const done = db.prepare('SELECT count(*) AS n FROM effects');

  async function handle(message) {
    const job = message.string();
    const delivery = `delivery ${message.info.deliveryCount}`;
    if (doneBy.get(job)) {
      log(`${job} already done: ack (${delivery})`);
      return message.ack();
    }
    // A hint is not ownership: take the job's lease, or leave the job to whoever has it.
    const lease = await client.tryAcquire(`jobs/${job}`);
    if (!lease) {
      log(`${job} is held by another consumer: later (${delivery})`);
      return message.nak(300);
    }
    try {
      log(`working on ${job} with token ${lease.token} (${delivery})`);
      await new Promise((resolve) => setTimeout(resolve, WORK_MS)); // the work
      lease.signal.throwIfAborted(); // the lease was lost meanwhile: leave the job to the next holder
      const result = await fence.write(`jobs/${job}`, lease.token, () => {
        if (doneBy.get(job)) return 'found already done';
        apply.run(job, lease.token, name);
        return 'applied';
      });
      log(
        result.accepted
          ? `${result.value} ${job} with token ${lease.token}`
          : `token ${lease.token} is stale for ${job}`,
      );
      message.ack();
    } catch (error) {
      log(`${job} not done (${error.code ?? error.message}): back to the queue`);
      message.nak(300);
    } finally {
      await lease.release().catch(() => {});
    }
  }

  // Until every job is done and every hint acked: the hint a dead consumer held comes back too.
  const drained = async () => {
    const { num_pending, num_ack_pending } = await consumer.info();
    return num_pending + num_ack_pending === 0;
  };
  while (done.get().n < jobs || !(await drained())) {
    const batch = await consumer.fetch({ max_messages: 1, expires: 1000 });
    for await (const message of batch) await handle(message);
  }
  log('every job is done and every hint acked');
  await client.close();
  await store.close();
  await nc.close();
  db.close();
}

async function demo(url) {
  const jobs = 8;
  const dbFile = join(tmpdir(), `leasehold-queue-${process.pid}.db`);
  const { nc, jsm } = await queue(url);
  await jsm.streams.purge(STREAM); // hints left over from an earlier run
  await nc.close();
  await produce(url, jobs);
  const self = fileURLToPath(import.meta.url);
  const names = ['consumer-a', 'consumer-b', 'consumer-c'];
  const children = names.map((name) =>
    spawn(process.execPath, [self, 'consume', url, dbFile, name, String(jobs)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  let killed = false;
  for (const child of children) {
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      if (!killed && /working on/.test(chunk.toString())) {
        killed = true;
        child.kill('SIGKILL'); // dies holding a lease and an unacked hint
        console.log('--- SIGKILLed in the middle of a job');
      }
    });
  }
  await Promise.all(children.map((child) => new Promise((resolve) => child.on('exit', resolve))));
  const db = new Database(dbFile, { readonly: true });
  const rows = db.prepare('SELECT job, token, worker FROM effects ORDER BY job').all();
  db.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(dbFile + suffix, { force: true });
  console.log(`${rows.length} jobs done, each exactly once:`);
  for (const row of rows) console.log(`  ${row.job} by ${row.worker} with token ${row.token}`);
}
