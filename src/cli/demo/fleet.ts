import { fork, spawn, type ChildProcess } from 'node:child_process';
import { untilReady } from '../harness/worker-ready.js';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseEvent, type WorkerEvent } from './events.js';
import { encodeWorkerConfig, type WorkerConfig } from './worker-config.js';

export type WorkerStatus = 'starting' | 'running' | 'paused' | 'stopping' | 'killed' | 'exited';

export interface WorkerProcess {
  readonly letter: string;
  readonly pid: number;
  status: WorkerStatus;
  /** Resolves once the process has exited and all of its output was read. */
  readonly closed: Promise<void>;
  /** The last few KiB it wrote on stderr, for error messages. */
  stderr: string;
}

export interface FleetEvents {
  event: [event: WorkerEvent];
  exit: [worker: WorkerProcess];
}

/**
 * The demo's worker processes. Each runs in its own process group, so a Ctrl-C in the terminal
 * reaches only the demo, which then kills them; a worker also leaves on its own when the demo's IPC
 * channel closes, and a stopped one gets SIGHUP from the kernel when its group is orphaned.
 */
export class Fleet extends EventEmitter<FleetEvents> {
  readonly workers = new Map<string, WorkerProcess>();
  private readonly children = new Map<string, ChildProcess>();
  private readonly resumers = new Map<string, ChildProcess>();

  constructor(
    private readonly entry: string,
    private readonly config: Omit<WorkerConfig, 'letter'>,
  ) {
    super();
  }

  /** Starts a worker process; resolves once it has joined the fleet. */
  start(letter: string, readyTimeoutMs: number): Promise<WorkerProcess> {
    const child = fork(this.entry, [], {
      env: { ...process.env, ...encodeWorkerConfig({ ...this.config, letter }) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      detached: true,
      execArgv: [],
    });
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const worker: WorkerProcess = {
      letter,
      pid: child.pid ?? -1,
      status: 'starting',
      closed,
      stderr: '',
    };
    this.workers.set(letter, worker);
    this.children.set(letter, child);
    child.stderr!.on('data', (chunk: Buffer) => {
      worker.stderr = (worker.stderr + chunk.toString()).slice(-4096);
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = parseEvent(line);
      if (!event) return;
      if (event.e === 'ready' && worker.status === 'starting') worker.status = 'running';
      this.emit('event', event);
    });
    child.on('error', () => undefined); // a failed IPC send to a dead worker; its exit tells the rest
    void closed.then(() => {
      if (worker.status !== 'killed') worker.status = 'exited';
      this.emit('exit', worker);
    });
    return untilReady(
      this,
      worker,
      letter,
      (event: WorkerEvent) => event.e === 'ready' && event.w === letter,
      readyTimeoutMs,
      'join the fleet',
    );
  }

  /** Sends a signal to a worker and notes what it does to it. */
  signal(letter: string, signal: 'SIGKILL' | 'SIGTERM' | 'SIGSTOP' | 'SIGCONT'): void {
    const worker = this.workers.get(letter);
    const child = this.children.get(letter);
    if (!worker || !child || worker.status === 'killed' || worker.status === 'exited') return;
    child.kill(signal);
    if (signal === 'SIGKILL') worker.status = 'killed';
    else if (signal === 'SIGTERM') worker.status = 'stopping';
    else if (signal === 'SIGSTOP') worker.status = 'paused';
    else if (worker.status === 'paused') worker.status = 'running';
  }

  /**
   * SIGSTOPs a worker. A small guard process sends it SIGCONT after `atMostMs` in any case, so a
   * worker cannot stay frozen forever if the demo itself is killed (SIGKILL) while it is stopped.
   */
  pause(letter: string, atMostMs: number): void {
    const worker = this.workers.get(letter);
    if (!worker || !this.children.has(letter)) return;
    if (!this.resumers.has(letter)) {
      const script = `setTimeout(() => { try { process.kill(${worker.pid}, 'SIGCONT'); } catch {} }, ${Math.ceil(atMostMs)});`;
      const guard = spawn(process.execPath, ['-e', script], { detached: true, stdio: 'ignore' });
      guard.on('error', () => undefined);
      guard.unref();
      this.resumers.set(letter, guard);
    }
    this.signal(letter, 'SIGSTOP');
  }

  /** SIGCONTs a paused worker and retires its guard. */
  resume(letter: string): void {
    this.signal(letter, 'SIGCONT');
    this.resumers.get(letter)?.kill('SIGKILL');
    this.resumers.delete(letter);
  }

  /** Whether the kernel shows the worker stopped (Linux `/proc`; elsewhere assumed once signalled). */
  isStopped(letter: string): boolean {
    const worker = this.workers.get(letter);
    if (!worker) return false;
    try {
      const stat = readFileSync(`/proc/${worker.pid}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      return state === 'T' || state === 't';
    } catch {
      return true;
    }
  }

  alive(): WorkerProcess[] {
    return [...this.workers.values()].filter((w) => w.status !== 'killed' && w.status !== 'exited');
  }

  /** Stops every worker gracefully (SIGTERM), killing those still there after `graceMs`. */
  async stopAll(graceMs: number): Promise<void> {
    const alive = this.alive();
    for (const worker of alive) {
      this.resume(worker.letter);
      this.signal(worker.letter, 'SIGTERM');
    }
    const timer = setTimeout(() => this.killAll(), graceMs);
    await Promise.all(alive.map((w) => w.closed));
    clearTimeout(timer);
  }

  /** SIGKILL to every worker still running; synchronous, so it can run in an exit handler. */
  killAll(): void {
    for (const worker of this.alive()) this.signal(worker.letter, 'SIGKILL');
    for (const guard of this.resumers.values()) guard.kill('SIGKILL');
    this.resumers.clear();
  }
}
