import type { startProcess } from './processes.js';
import { signalTree, stopProcess } from './processes.js';

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

  /** SIGSTOP of its whole process tree: the ports stay open, nothing answers. */
  pause(): void {
    if (this.child?.pid) signalTree(this.child.pid, 'SIGSTOP');
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
