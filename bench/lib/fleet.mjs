// The coordinator's side of a fleet of worker processes, each hosting one or more managers: spawn,
// ask for reports over IPC, stop one manager gracefully, kill a process, kill the rest. Every child
// is registered for cleanup, so none outlives the run.
import { fork } from 'node:child_process';
import { clearTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';
import { onCleanup } from './processes.mjs';

const WORKER = fileURLToPath(new URL('../fleet-worker.mjs', import.meta.url));

export class Fleet {
  /** `config`: what every worker gets (url, resources, ttlMs, heartbeatMs, reconcileMs). */
  constructor(config) {
    this.config = config;
    this.processes = [];
    this.workers = new Map(); // owner → { owner, proc, alive, leaving, last }
    this.nextId = 0;
  }

  /** Owners of managers that are running and not leaving. */
  get live() {
    return [...this.workers.values()]
      .filter((w) => w.alive && !w.leaving && w.proc.alive)
      .map((w) => w.owner);
  }

  /** A process hosting `count` new managers; returns their owners. */
  spawn(count = 1) {
    const owners = Array.from(
      { length: count },
      () => `w${String(this.nextId++).padStart(3, '0')}`,
    );
    const child = fork(WORKER, [JSON.stringify({ ...this.config, owners })], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    const proc = {
      child,
      owners,
      spawnedAt: Date.now(),
      alive: true,
      stderr: '',
      waiting: new Map(),
    };
    child.stderr.on('data', (chunk) => (proc.stderr = (proc.stderr + chunk).slice(-4096)));
    child.on('message', (message) => this.receive(proc, message));
    proc.forget = onCleanup(() => proc.alive && child.kill('SIGKILL'));
    proc.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        proc.alive = false;
        proc.exit = code ?? signal;
        resolve();
      }),
    );
    this.processes.push(proc);
    for (const owner of owners) {
      let stopped;
      const done = new Promise((resolve) => (stopped = resolve));
      this.workers.set(owner, {
        owner,
        proc,
        alive: true,
        leaving: false,
        last: null,
        stopped,
        done,
      });
    }
    return owners;
  }

  receive(proc, message) {
    if (message.type === 'started') proc.startedAt = message.at;
    else if (message.type === 'start-failed') proc.startError = message.error;
    else if (message.type === 'report') {
      for (const [owner, report] of Object.entries(message.reports ?? {})) {
        const worker = this.workers.get(owner);
        if (worker) worker.last = report;
      }
      proc.waiting.get(message.id)?.(true);
    } else if (message.type === 'stopped') {
      const worker = this.workers.get(message.owner);
      if (!worker) return;
      if (message.report) worker.last = message.report;
      worker.alive = false;
      worker.stopped();
    }
  }

  /**
   * Asks every process with a running manager for fresh reports and waits up to `timeoutMs` for
   * the answers; a busy process that does not answer in time keeps its managers' previous reports
   * (marked by their `at`). A process answers only between macrotasks, so `lastPoll` (the slowest
   * answer, the silent managers) shows how long the event loops stay blocked.
   */
  async poll(timeoutMs = 5000) {
    const id = Math.random();
    // Not a leaving manager: it is stopping, and answers no more.
    const asked = this.processes.filter((p) => p.alive && this.running(p).length > 0);
    const sent = Date.now();
    const answered = await Promise.all(asked.map((p) => this.ask(p, id, timeoutMs)));
    this.lastPoll = {
      slowestMs: Date.now() - sent,
      silent: asked.filter((p, i) => !answered[i]).flatMap((p) => this.running(p)),
    };
    return this.reports();
  }

  /** The owners of a process's managers that run and are not leaving. */
  running(proc) {
    return proc.owners.filter((o) => {
      const w = this.workers.get(o);
      return w.alive && !w.leaving;
    });
  }

  /** Resolves `true` when the process answered within `timeoutMs`. */
  ask(proc, id, timeoutMs) {
    return new Promise((resolve) => {
      const done = (answered = false) => {
        clearTimeout(timer);
        proc.waiting.delete(id);
        resolve(answered);
      };
      const timer = setTimeout(done, timeoutMs);
      proc.waiting.set(id, done);
      try {
        proc.child.send({ type: 'report', id });
      } catch {
        done(); // the channel closed: the process is exiting
      }
    });
  }

  /** Every running manager's view of `resources` (see the worker's `inspectAll`). */
  inspect(resources, timeoutMs = 10_000) {
    return this.askAll({ type: 'inspect', resources }, timeoutMs);
  }

  /** Every running manager's held and member counts over time since `since` (`historyAll`). */
  history(since, timeoutMs = 10_000) {
    return this.askAll({ type: 'history', since }, timeoutMs);
  }

  /** Sends `message` (with a fresh id) to every live process and merges the answers' reports. */
  async askAll(message, timeoutMs) {
    const id = Math.random();
    const out = {};
    await Promise.all(
      this.processes
        .filter((p) => p.alive)
        .map(
          (p) =>
            new Promise((resolve) => {
              const timer = setTimeout(resolve, timeoutMs);
              const onMessage = (answer) => {
                if (answer.type !== message.type || answer.id !== id) return;
                Object.assign(out, answer.reports);
                p.child.off('message', onMessage);
                clearTimeout(timer);
                resolve();
              };
              p.child.on('message', onMessage);
              p.child.send({ ...message, id }, () => undefined);
            }),
        ),
    );
    return out;
  }

  /** The latest report of every manager ever started (a stopped one's is its final report). */
  reports() {
    return new Map([...this.workers.values()].map((w) => [w.owner, w.last]));
  }

  broadcast(message) {
    for (const p of this.processes) if (p.alive) p.child.send(message, () => undefined);
  }

  /** One manager stops gracefully (releasing everything); returns its stop time. */
  async leave(owner, timeoutMs = 30_000) {
    const worker = this.workers.get(owner);
    worker.leaving = true;
    const sent = Date.now();
    worker.proc.child.send({ type: 'stop', owner }, () => undefined);
    const timer = setTimeout(() => worker.proc.child.kill('SIGKILL'), timeoutMs);
    await Promise.race([worker.done, worker.proc.exited]);
    clearTimeout(timer);
    return { exitMs: Date.now() - sent, stopMs: worker.last?.stopMs ?? null };
  }

  /** SIGKILL of the process hosting `owner`: every manager in it dies without a word. */
  async crash(owner) {
    const worker = this.workers.get(owner);
    if (!worker) throw new Error(`no worker ${owner} to crash`);
    const { proc } = worker;
    proc.crashed = true;
    proc.child.kill('SIGKILL');
    await proc.exited;
    proc.forget();
    return proc.owners.filter((o) => this.workers.get(o).alive);
  }

  async killAll() {
    for (const p of this.processes) if (p.alive) p.child.kill('SIGKILL');
    await Promise.all(this.processes.map((p) => p.exited));
    for (const p of this.processes) p.forget();
  }

  /** Processes that died on their own (a crash, a failed start), with the tail of their stderr. */
  failures() {
    return this.processes
      .filter(
        (p) => p.startError || (!p.alive && !p.crashed && p.exit !== 0 && p.exit !== 'SIGKILL'),
      )
      .map((p) => ({
        owner: p.owners.join(','),
        exit: p.exit,
        error: p.startError,
        stderr: p.stderr,
      }));
  }
}
