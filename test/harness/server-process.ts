import type { startProcess } from './processes.js';
import { readFileSync } from 'node:fs';
import { processTree, signalTree, stopProcess } from './processes.js';

/**
 * The fault controls every private server shares: kill, pause, resume, restart on the same port
 * and folder. A server class says how to `launch` itself and keeps its process in `child`.
 */
export abstract class ServerProcess {
  protected child: ReturnType<typeof startProcess> | undefined;

  /** Starts the server process and waits until it answers. */
  abstract launch(): Promise<void>;

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** SIGKILL: no shutdown, no goodbye to clients or peers. The data folder stays for `restart`. */
  async kill(): Promise<void> {
    if (this.child) await stopProcess(this.child, 'SIGKILL');
    this.child = undefined;
  }

  /**
   * SIGSTOP of its whole process tree: the ports stay open, nothing answers. Returns once every
   * process of the tree shows as stopped (at most half a second), so no call made after it can
   * still be served by a thread that had not stopped yet.
   */
  pause(): void {
    const pid = this.child?.pid;
    if (!pid) return;
    signalTree(pid, 'SIGSTOP');
    const until = Date.now() + 500;
    while (Date.now() < until && !processTree(pid).every(stopped))
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
  }

  resume(): void {
    if (this.child?.pid) signalTree(this.child.pid, 'SIGCONT');
  }

  /** Kills the server and starts it again on the same port and folder. */
  async restart(): Promise<void> {
    await this.kill();
    await this.launch();
  }
}

/** Whether `pid` is stopped (or gone): its state in /proc is T (or t), true where /proc is missing. */
function stopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'T' || state === 't' || state === 'Z';
  } catch {
    return true;
  }
}
