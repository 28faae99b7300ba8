import { fork, spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { untilReady } from './worker-ready.js';
import { parseEvent, WORKER_ENV, type WorkerConfig, type WorkerEvent } from './worker-protocol.js';

export type WorkerStatus =
  'starting' | 'running' | 'paused' | 'stalled' | 'stopping' | 'killed' | 'exited';

export interface WorkerProcess {
  readonly id: string;
  readonly pid: number;
  readonly skewMs: number;
  /** Its clock's rate error (`drift`); 0 on the host's rate. */
  readonly driftRate: number;
  /** `killed` from the SIGKILL on; `exited` once a process not killed has gone. */
  status: WorkerStatus;
  /** The resources it holds, as its events tell: acquired and not yet released or lost. */
  readonly holding: Set<string>;
  /** Resolves once the process has exited and all of its output was read. */
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last few KiB it wrote on stderr, for error messages. */
  stderr: string;
}

export interface FleetEvents {
  event: [event: WorkerEvent];
  exit: [worker: WorkerProcess, how: string];
}

/** A worker clock: its offset from the host's wall clock and its rate error. */
export interface WorkerClockSpec {
  skewMs: number;
  driftRate: number;
}

const HOST_RATE: WorkerClockSpec = { skewMs: 0, driftRate: 0 };

/** Where the workers run, when not simply here. */
export interface WorkerPlacement {
  /** The command prefix worker `id` starts under; it then executes node, keeping the pid. */
  wrap(id: string): readonly string[];
  /** Worker `id` has gone for good. */
  gone(id: string): void;
}

/**
 * The worker processes of demo and verify (`worker.ts`). Each runs in its own process group, so a
 * Ctrl-C in the terminal reaches only the command, which then kills them; a worker also leaves on
 * its own when the command's IPC channel closes, and a stopped one gets SIGHUP from the kernel when
 * its group is orphaned. None outlives the command.
 */
export class Fleet extends EventEmitter<FleetEvents> {
  readonly workers = new Map<string, WorkerProcess>();
  private readonly children = new Map<string, ChildProcess>();
  private readonly guards = new Map<string, ChildProcess>();
  private readonly gone = new Set<string>();

  /**
   * @param entry the worker's script (`worker.js`).
   * @param base what every worker is told, but its id and clock.
   * @param joining what a worker does before it counts as started, for error messages.
   */
  constructor(
    private readonly entry: string,
    private readonly base: Omit<WorkerConfig, 'id' | 'owner' | 'skewMs' | 'driftRate'>,
    private readonly options: {
      owner?: (id: string) => string;
      joining?: string;
      /** Where each worker runs: a command prefix for it (`ip netns exec …`), told when it has gone. */
      placement?: WorkerPlacement;
    } = {},
  ) {
    super();
  }

  /**
   * Starts a worker on a clock `skewMs` off and running at `1 + driftRate` (the host's by
   * default); resolves once it has joined, rejects if it exits or takes too long.
   */
  start(id: string, readyTimeoutMs: number, clock = HOST_RATE): Promise<WorkerProcess> {
    const owner = this.options.owner?.(id);
    const config: WorkerConfig = { ...this.base, id, ...(owner ? { owner } : {}), ...clock };
    // A placement's prefix runs first and then executes node itself, keeping the pid and the IPC channel.
    const [wrapper, ...before] = this.options.placement?.wrap(id) ?? [];
    const child = fork(this.entry, [], {
      env: { ...process.env, [WORKER_ENV]: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      detached: true,
      ...(wrapper === undefined
        ? { execArgv: [] }
        : { execPath: wrapper, execArgv: [...before, process.execPath] }),
    });
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal })),
    );
    const worker: WorkerProcess = {
      id,
      pid: child.pid ?? -1,
      skewMs: clock.skewMs,
      driftRate: clock.driftRate,
      status: 'starting',
      holding: new Set(),
      closed,
      stderr: '',
    };
    this.workers.set(id, worker);
    this.children.set(id, child);
    child.stderr!.on('data', (chunk: Buffer) => {
      worker.stderr = (worker.stderr + chunk.toString()).slice(-4096);
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = parseEvent(line);
      if (!event) return;
      if (event.e === 'ready' && worker.status === 'starting') worker.status = 'running';
      else if (event.e === 'acquired') worker.holding.add(event.resource);
      else if (event.e === 'released' || event.e === 'lost') worker.holding.delete(event.resource);
      this.emit('event', event);
    });
    child.on('error', () => undefined); // a failed IPC send to a dead worker; its exit tells the rest
    void closed.then(({ code, signal }) => {
      this.gone.add(id);
      if (worker.status !== 'killed') worker.status = 'exited';
      worker.holding.clear();
      this.guards.get(id)?.kill('SIGKILL');
      this.guards.delete(id);
      this.options.placement?.gone(id);
      this.emit('exit', worker, signal ? `signal ${signal}` : `code ${code}`);
    });
    return untilReady(
      this,
      worker,
      id,
      (event: WorkerEvent) => event.e === 'ready' && event.w === id,
      readyTimeoutMs,
      this.options.joining,
    );
  }

  /** The workers that have joined and are neither paused, stalled, stopping nor dead. */
  running(): WorkerProcess[] {
    return [...this.workers.values()].filter((w) => w.status === 'running');
  }

  /** The workers whose process has not gone yet. */
  live(): WorkerProcess[] {
    return [...this.workers.values()].filter((w) => !this.gone.has(w.id));
  }

  /** Sends a signal to a worker and notes what it does to it. */
  signal(id: string, signal: 'SIGKILL' | 'SIGTERM' | 'SIGSTOP' | 'SIGCONT'): void {
    const worker = this.workers.get(id);
    if (!worker || this.gone.has(id) || worker.status === 'killed') return;
    this.children.get(id)?.kill(signal);
    if (signal === 'SIGKILL') worker.status = 'killed';
    else if (signal === 'SIGTERM') worker.status = 'stopping';
    else if (signal === 'SIGSTOP') worker.status = 'paused';
    else if (worker.status === 'paused') worker.status = 'running';
  }

  /**
   * SIGSTOPs a running worker. A guard process SIGCONTs it after `atMostMs` in any case, so a
   * worker cannot stay frozen forever if the command itself is killed (SIGKILL) meanwhile.
   */
  pause(id: string, atMostMs: number): void {
    const worker = this.workers.get(id);
    if (!worker || worker.status !== 'running') return;
    const script = `setTimeout(() => { try { process.kill(${worker.pid}, 'SIGCONT'); } catch {} }, ${Math.ceil(atMostMs)});`;
    const guard = spawn(process.execPath, ['-e', script], { detached: true, stdio: 'ignore' });
    guard.on('error', () => undefined);
    guard.unref();
    this.guards.set(id, guard);
    this.signal(id, 'SIGSTOP');
  }

  /** SIGCONTs a paused worker and retires its guard. */
  resume(id: string): void {
    this.signal(id, 'SIGCONT');
    this.guards.get(id)?.kill('SIGKILL');
    this.guards.delete(id);
  }

  /** Whether the kernel shows the worker stopped (Linux `/proc`; elsewhere assumed once signalled). */
  isStopped(id: string): boolean {
    const worker = this.workers.get(id);
    if (!worker) return false;
    try {
      const stat = readFileSync(`/proc/${worker.pid}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      return state === 'T' || state === 't';
    } catch {
      return true;
    }
  }

  /** Asks a worker to block its event loop for `ms` (a long synchronous call). */
  stall(id: string, ms: number): void {
    const worker = this.workers.get(id);
    const child = this.children.get(id);
    if (!worker || !child || worker.status !== 'running') return;
    child.send({ stallMs: ms }, () => undefined);
    worker.status = 'stalled';
    setTimeout(() => {
      if (worker.status === 'stalled') worker.status = 'running';
    }, ms).unref();
  }

  /** SIGTERMs every live worker (each releases its leases) and waits, then SIGKILLs what is left. */
  async stopAll(timeoutMs: number): Promise<void> {
    for (const w of this.live()) {
      if (w.status === 'paused') this.resume(w.id);
      this.signal(w.id, 'SIGTERM');
    }
    const all = Promise.all(this.live().map((w) => w.closed));
    await Promise.race([all, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    this.killAll();
    await all;
  }

  /** SIGKILL to every worker still there; synchronous, so it can run in an exit handler. */
  killAll(): void {
    for (const w of this.live()) {
      w.status = 'killed';
      this.children.get(w.id)?.kill('SIGKILL');
      this.children.get(w.id)?.kill('SIGCONT');
    }
    for (const guard of this.guards.values()) guard.kill('SIGKILL');
    this.guards.clear();
  }
}
