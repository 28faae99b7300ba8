// Failover between two LeaseClients in separate processes, on a short TTL: how long after a
// SIGKILL of the holder the waiter holds the lease (the lease has to lapse first: about the TTL),
// and how long after a graceful release (the waiter's next attempt: its backoff). The waiter
// waits with `client.acquire()`, whose backoff between attempts grows to ttl / 4.
import { fork } from 'node:child_process';
import { clearTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';
import { onCleanup, sleep } from '../processes.mjs';
import { latencies } from '../stats.mjs';

const WORKER = fileURLToPath(new URL('../failover-worker.mjs', import.meta.url));
const TTL_MS = 2000;
const HEARTBEAT_MS = 400; // ttl / 5: room for DynamoDB's 1 s clock-skew allowance
const now = () => performance.timeOrigin + performance.now();

export function failoverStores(quick) {
  return quick
    ? ['sqlite', 'redis', 'postgres']
    : ['sqlite', 'postgres', 'mysql', 'redis', 'etcd', 'dynamodb', 'nats', 'zookeeper', 's3'];
}

export async function failover({ store, server, libs, quick, log }) {
  const trials = quick ? 3 : 10;
  const url = server.url('fo');
  // Creates the table (DynamoDB's included) before the two children open the store at once.
  const setup = await libs[0].lib.openStore(url);
  await setup.close();
  const config = {
    dist: libs[0].dist,
    url,
    resource: 'failover/job',
    ttlMs: TTL_MS,
    heartbeatMs: HEARTBEAT_MS,
  };
  let n = 0;
  const start = () => Worker.start({ ...config, owner: `w${n++}` });
  const workers = []; // every worker started, killed at the end whatever happened
  const killed = [];
  const released = [];
  try {
    let holder = await start();
    workers.push(holder);
    let waiter = await start();
    workers.push(waiter);
    holder.send('acquire');
    await holder.next('held');
    for (let t = 0; t < trials; t++) {
      waiter.send('acquire');
      await waiter.next('waiting');
      await sleep(200 + Math.random() * 400); // the waiter's backoff at its usual pace, the holder renewing
      const at = now();
      holder.kill();
      // The next waiter starts while this one waits out the TTL.
      const next = start().then((w) => {
        workers.push(w);
        return w;
      });
      next.catch(() => undefined); // awaited below; not unhandled if the wait fails first
      killed.push((await waiter.next('held', TTL_MS * 5)).at - at);
      [holder, waiter] = [waiter, await next];
    }
    for (let t = 0; t < trials; t++) {
      waiter.send('acquire');
      await waiter.next('waiting');
      await sleep(200 + Math.random() * 400);
      holder.send('release');
      const release = await holder.next('released');
      released.push((await waiter.next('held', TTL_MS * 5)).at - release.at);
      [holder, waiter] = [waiter, holder];
    }
  } finally {
    for (const w of workers) w.kill();
  }
  const row = {
    section: 'failover',
    store,
    ttlMs: TTL_MS,
    heartbeatMs: HEARTBEAT_MS,
    killToHeldMs: latencies(killed),
    releaseToHeldMs: latencies(released),
  };
  log(
    `SIGKILL → held p50 ${row.killToHeldMs.p50} ms, p99 ${row.killToHeldMs.p99} ms (ttl ${TTL_MS}); release → held p50 ${row.releaseToHeldMs.p50} ms, p99 ${row.releaseToHeldMs.p99} ms`,
  );
  return [row];
}

/** A forked failover-worker.mjs and its messages, awaited by type. */
class Worker {
  static async start(config) {
    const child = fork(WORKER, [JSON.stringify(config)], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    const worker = new Worker(child);
    try {
      await worker.next('ready', 30_000);
    } catch (error) {
      worker.kill();
      throw error;
    }
    return worker;
  }

  constructor(child) {
    this.child = child;
    this.inbox = [];
    this.waiting = null;
    this.stderr = '';
    child.stderr.on('data', (chunk) => (this.stderr = (this.stderr + chunk).slice(-4096)));
    child.on('message', (message) => {
      this.inbox.push(message);
      this.waiting?.();
    });
    child.on('exit', (code, signal) => {
      this.exit = code ?? signal;
      this.waiting?.();
    });
    this.forget = onCleanup(() => child.exitCode === null && child.kill('SIGKILL'));
  }

  send(op) {
    this.child.send({ op });
  }

  kill() {
    this.forget();
  }

  /** The next message of `type`; an `error` message, an exit or `timeoutMs` rejects. */
  async next(type, timeoutMs = 30_000) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const at = this.inbox.findIndex((m) => m.type === type || m.type === 'error');
      if (at >= 0) {
        const [message] = this.inbox.splice(at, 1);
        if (message.type === 'error') throw new Error(`failover worker: ${message.error}`);
        return message;
      }
      if (this.exit !== undefined)
        throw new Error(`failover worker exited (${this.exit}): ${this.stderr}`);
      const left = end - Date.now();
      if (left <= 0) throw new Error(`failover worker: no "${type}" within ${timeoutMs} ms`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiting = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiting = null;
    }
  }
}
