import { fork, spawn, type ChildProcess } from 'node:child_process';
import { untilReady } from '../harness/worker-ready.js';
import { EventEmitter } from 'node:events';
import { createInterface } from 'node:readline';
import {
  parseVerifyEvent,
  VERIFY_WORKER_ENV,
  type VerifyEvent,
  type VerifyWorkerConfig,
} from '../harness/worker-protocol.js';

export type VerifyWorkerStatus =
  'starting' | 'running' | 'paused' | 'stalled' | 'stopping' | 'gone';

export interface VerifyWorker {
  readonly id: string;
  readonly pid: number;
  readonly skewMs: number;
  /** Its clock's rate error (`drift`); 0 on the host's rate. */
  readonly driftRate: number;
  status: VerifyWorkerStatus;
  /** The resources it holds, as its events tell: acquired and not yet released or lost. */
  readonly holding: Set<string>;
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: string;
}

interface FleetEvents {
  event: [event: VerifyEvent];
  exit: [worker: VerifyWorker, how: string];
}

/** verify's worker processes, each in its own process group; none outlives verify. */
export class VerifyFleet extends EventEmitter<FleetEvents> {
  readonly workers = new Map<string, VerifyWorker>();
  private readonly children = new Map<string, ChildProcess>();
  private readonly guards = new Map<string, ChildProcess>();

  constructor(
    private readonly entry: string,
    private readonly base: Omit<VerifyWorkerConfig, 'id' | 'skewMs' | 'driftRate'>,
  ) {
    super();
  }

  /**
   * Starts a worker on a clock `skewMs` off and running at `1 + driftRate`; resolves once it has
   * joined, rejects if it exits or takes too long.
   */
  start(
    id: string,
    clock: { skewMs: number; driftRate: number },
    readyTimeoutMs: number,
  ): Promise<VerifyWorker> {
    const config: VerifyWorkerConfig = { ...this.base, id, ...clock };
    const child = fork(this.entry, [], {
      env: { ...process.env, [VERIFY_WORKER_ENV]: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      detached: true,
      execArgv: [],
    });
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal })),
    );
    const worker: VerifyWorker = {
      id,
      pid: child.pid ?? -1,
      ...clock,
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
      const event = parseVerifyEvent(line);
      if (!event) return;
      if (event.e === 'ready' && worker.status === 'starting') worker.status = 'running';
      else if (event.e === 'acquired') worker.holding.add(event.resource);
      else if (event.e === 'released' || event.e === 'lost') worker.holding.delete(event.resource);
      this.emit('event', event);
    });
    child.on('error', () => undefined);
    void closed.then(({ code, signal }) => {
      worker.status = 'gone';
      worker.holding.clear();
      this.guards.get(id)?.kill('SIGKILL');
      this.emit('exit', worker, signal ? `signal ${signal}` : `code ${code}`);
    });
    return untilReady(
      this,
      worker,
      id,
      (event: VerifyEvent) => event.e === 'ready' && event.w === id,
      readyTimeoutMs,
    );
  }

  running(): VerifyWorker[] {
    return [...this.workers.values()].filter((w) => w.status === 'running');
  }

  live(): VerifyWorker[] {
    return [...this.workers.values()].filter((w) => w.status !== 'gone');
  }

  signal(id: string, signal: 'SIGKILL' | 'SIGTERM' | 'SIGSTOP' | 'SIGCONT'): void {
    const worker = this.workers.get(id);
    if (!worker || worker.status === 'gone') return;
    this.children.get(id)?.kill(signal);
    if (signal === 'SIGTERM') worker.status = 'stopping';
    else if (signal === 'SIGSTOP') worker.status = 'paused';
    else if (signal === 'SIGCONT' && worker.status === 'paused') worker.status = 'running';
  }

  /** SIGSTOPs a worker; a guard process SIGCONTs it after `atMostMs` even if verify dies meanwhile. */
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

  resume(id: string): void {
    this.signal(id, 'SIGCONT');
    this.guards.get(id)?.kill('SIGKILL');
    this.guards.delete(id);
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

  killAll(): void {
    for (const w of this.live()) {
      this.children.get(w.id)?.kill('SIGKILL');
      this.children.get(w.id)?.kill('SIGCONT');
    }
    for (const guard of this.guards.values()) guard.kill('SIGKILL');
    this.guards.clear();
  }
}
