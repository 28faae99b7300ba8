// The coordinator's side of a fleet of worker processes: spawn, ask for reports over IPC, stop one
// gracefully, kill the rest. Every child is registered for cleanup, so none outlives the run.
import { fork } from 'node:child_process';
import { clearTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';
import { onCleanup } from './processes.mjs';

const WORKER = fileURLToPath(new URL('../fleet-worker.mjs', import.meta.url));

export class Fleet {
  /** `config`: what every worker gets (url, resources, ttlMs, heartbeatMs, reconcileMs). */
  constructor(config) {
    this.config = config;
    this.workers = new Map(); // owner → { child, spawnedAt, startedAt, alive, last, stderr }
    this.nextId = 0;
  }

  /** Owners of workers that are running and not leaving. */
  get live() {
    return [...this.workers.values()].filter((w) => w.alive && !w.leaving).map((w) => w.owner);
  }

  spawn() {
    const owner = `w${String(this.nextId++).padStart(3, '0')}`;
    const child = fork(WORKER, [JSON.stringify({ ...this.config, owner })], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    const worker = { owner, child, spawnedAt: Date.now(), alive: true, last: null, stderr: '' };
    child.stderr.on('data', (chunk) => (worker.stderr = (worker.stderr + chunk).slice(-4096)));
    child.on('message', (message) => this.receive(worker, message));
    worker.forget = onCleanup(() => worker.alive && child.kill('SIGKILL'));
    worker.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        worker.alive = false;
        worker.exit = code ?? signal;
        resolve();
      }),
    );
    this.workers.set(owner, worker);
    return owner;
  }

  receive(worker, message) {
    if (message.type === 'started') worker.startedAt = message.at;
    else if (message.type === 'start-failed') worker.startError = message.error;
    else if (message.type === 'report' && message.report) worker.last = message.report;
    else if (message.type === 'stopped' && message.report) worker.last = message.report;
    if (message.type === 'report') worker.waiting?.get(message.id)?.(true);
  }

  /**
   * Asks every live worker for a fresh report and waits up to `timeoutMs` for the answers; a busy
   * worker that does not answer in time keeps its previous report (marked by its `at`). A worker
   * answers only between macrotasks, so `lastPoll` (the slowest answer, the silent workers) shows
   * how long the workers' event loops stay blocked.
   */
  async poll(timeoutMs = 5000) {
    const id = Math.random();
    // Not a leaving worker: it is stopping, and answers no more (waiting for it would add
    // `timeoutMs` to a leave).
    const asked = [...this.workers.values()].filter((w) => w.alive && !w.leaving);
    const sent = Date.now();
    const answered = await Promise.all(asked.map((w) => this.ask(w, id, timeoutMs)));
    this.lastPoll = {
      slowestMs: Date.now() - sent,
      silent: asked.filter((w, i) => !answered[i]).map((w) => w.owner),
    };
    return this.reports();
  }

  /** Resolves `true` when the worker answered within `timeoutMs`. */
  ask(worker, id, timeoutMs) {
    return new Promise((resolve) => {
      worker.waiting ??= new Map();
      const done = (answered = false) => {
        clearTimeout(timer);
        worker.waiting.delete(id);
        resolve(answered);
      };
      const timer = setTimeout(done, timeoutMs);
      worker.waiting.set(id, done);
      try {
        worker.child.send({ type: 'report', id });
      } catch {
        done(); // the channel closed: the worker is exiting
      }
    });
  }

  /** The latest report of every worker ever spawned (a stopped one's is its final report). */
  reports() {
    return new Map([...this.workers.values()].map((w) => [w.owner, w.last]));
  }

  broadcast(message) {
    for (const w of this.workers.values()) if (w.alive) w.child.send(message, () => undefined);
  }

  /** SIGTERM: the worker stops its manager (releasing everything) and exits; returns its stop time. */
  async leave(owner, timeoutMs = 30_000) {
    const worker = this.workers.get(owner);
    worker.leaving = true;
    const sent = Date.now();
    worker.child.kill('SIGTERM');
    const timer = setTimeout(() => worker.child.kill('SIGKILL'), timeoutMs);
    await worker.exited;
    clearTimeout(timer);
    worker.forget();
    return { exit: worker.exit, exitMs: Date.now() - sent, stopMs: worker.last?.stopMs ?? null };
  }

  async killAll() {
    for (const w of this.workers.values()) if (w.alive) w.child.kill('SIGKILL');
    await Promise.all([...this.workers.values()].map((w) => w.exited));
    for (const w of this.workers.values()) w.forget();
  }

  /** Workers that died on their own (a crash, a failed start), with the tail of their stderr. */
  failures() {
    return [...this.workers.values()]
      .filter((w) => w.startError || (!w.alive && !w.leaving && w.exit !== 'SIGKILL'))
      .map((w) => ({ owner: w.owner, exit: w.exit, error: w.startError, stderr: w.stderr }));
  }
}
