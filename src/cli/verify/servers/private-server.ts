import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { rmSync } from 'node:fs';
import { processTree, signalAll, untilEnded } from './process-tree.js';
import { watchFolder } from './watchdog.js';

/** What to run to start a server: the file, its arguments and spawn options. */
export interface ServerCommand {
  file: string;
  args: string[];
  options?: SpawnOptions;
}

/** A server process, keeping the tail of its output for error messages. */
interface ServerChild {
  process: ChildProcess;
  output: () => string;
  exited: () => string | undefined;
}

/**
 * A store server verify starts for one run: a private instance from the installed binary, on a
 * free 127.0.0.1 port, with its data in a temporary folder. It can be paused (SIGSTOP of its whole
 * process tree), killed and started again on the same port and folder, and is stopped and its
 * folder removed when the run ends, whichever way it ends.
 */
export abstract class PrivateServer {
  /** The program, for messages (`redis-server`). */
  abstract readonly program: string;
  /** The URL verify's processes open. */
  abstract get url(): string;
  /** The port clients connect to. */
  abstract get port(): number;
  /** How to start the server process on its folder and port. */
  protected abstract command(): ServerCommand;
  /** Whether the process answers, given what it has printed so far. */
  protected abstract isReady(output: string): Promise<boolean> | boolean;
  /** The signal that shuts the server down cleanly. */
  protected readonly stopSignal: NodeJS.Signals = 'SIGTERM';

  private child: ServerChild | undefined;
  /** A one-off helper process running to its end (initdb). */
  private helper: ServerChild | undefined;
  private stopped = false;
  private readonly watchdog: { dismiss: () => void };

  constructor(
    /** The server's own temporary folder, removed by `stop`. */
    readonly dir: string,
  ) {
    this.watchdog = watchFolder(dir);
  }

  /** The pid of the running server, if it runs. */
  get pid(): number | undefined {
    return this.child?.process.pid;
  }

  /** Work done once before the first start (PostgreSQL's initdb). */
  async prepare(): Promise<void> {}

  /** Starts the server and waits until it answers; throws with its last output if it cannot. */
  async launch(timeoutMs = 20_000): Promise<void> {
    if (this.stopped) throw new Error(`${this.program} was stopped`);
    const { file, args, options } = this.command();
    const child = this.spawn(file, args, { cwd: this.dir, ...options });
    this.child = child;
    const end = Date.now() + timeoutMs;
    for (;;) {
      const exited = child.exited();
      if (exited !== undefined)
        throw new Error(
          `${this.program} exited (${exited}) while starting: ${tail(child.output())}`,
        );
      if (this.stopped) throw new Error(`${this.program} was stopped while starting`);
      const ready = await Promise.resolve()
        .then(() => this.isReady(child.output()))
        .catch(() => false);
      if (ready) return;
      if (Date.now() > end) {
        await this.kill();
        throw new Error(
          `${this.program} did not start within ${timeoutMs} ms: ${tail(child.output())}`,
        );
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Runs a helper program to its end in the server's folder; throws with its output if it fails. */
  protected async runToEnd(
    file: string,
    args: string[],
    options: SpawnOptions = {},
  ): Promise<void> {
    if (this.stopped) throw new Error(`${this.program} was stopped`);
    const helper = this.spawn(file, args, { cwd: this.dir, ...options });
    this.helper = helper;
    try {
      await new Promise<void>((resolve) => helper.process.once('close', () => resolve()));
    } finally {
      this.helper = undefined;
    }
    const exited = helper.exited();
    if (exited !== 'code 0')
      throw new Error(`${file} failed (${exited}): ${tail(helper.output())}`);
  }

  /** SIGSTOP of every process of the server: connections stay open, nothing answers. */
  pause(): void {
    if (this.child?.process.pid) signalAll(processTree(this.child.process.pid), 'SIGSTOP');
  }

  resume(): void {
    if (this.child?.process.pid) signalAll(processTree(this.child.process.pid), 'SIGCONT');
  }

  /** SIGKILL of every process of the server (a crash); waits until all have ended. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    const pid = child?.process.pid;
    if (!child || pid === undefined || child.exited() !== undefined) return;
    const pids = processTree(pid);
    signalAll(pids, 'SIGKILL');
    // A new PostgreSQL refuses to start while a backend of the old one still holds its memory.
    if (!(await untilEnded(pids, 10_000)))
      throw new Error(`${this.program} (pid ${pid}) did not end after SIGKILL`);
  }

  /** Kills the server and starts it again on the same port and folder. */
  async restart(): Promise<void> {
    await this.kill();
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await this.launch();
        return;
      } catch (error) {
        lastError = error;
        await this.kill().catch(() => undefined);
        if (this.stopped) break;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    throw lastError;
  }

  /**
   * Shuts the server down (its clean-stop signal, SIGKILL of the tree after `graceMs`), waits
   * until every process of it has ended and removes its folder. Safe to call more than once.
   */
  async stop(graceMs = 5000): Promise<void> {
    this.stopped = true;
    this.killHelper();
    const child = this.child;
    const pid = child?.process.pid;
    if (child && pid !== undefined && child.exited() === undefined) {
      const pids = processTree(pid);
      signalAll(pids, 'SIGCONT');
      signalAll([pid], this.stopSignal);
      if (!(await untilEnded([pid], graceMs))) signalAll(processTree(pid), 'SIGKILL');
      await untilEnded(pids, graceMs);
    }
    this.child = undefined;
    this.removeFolder();
  }

  /** The synchronous last resort (process exit): SIGKILL of the tree and removal of the folder. */
  killNow(): void {
    this.stopped = true;
    this.killHelper();
    const pid = this.child?.process.pid;
    if (pid !== undefined && this.child?.exited() === undefined)
      signalAll(processTree(pid), 'SIGKILL');
    this.child = undefined;
    this.removeFolder();
  }

  private killHelper(): void {
    const pid = this.helper?.process.pid;
    if (pid !== undefined) signalAll(processTree(pid), 'SIGKILL');
  }

  private removeFolder(): void {
    try {
      rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // a process still ending wrote into it; the folder is in the system temp dir
    }
    this.watchdog.dismiss();
  }

  /** Spawns a process in its own group (a Ctrl-C at the terminal reaches verify, not the server). */
  protected spawn(file: string, args: string[], options: SpawnOptions): ServerChild {
    const child = spawn(file, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      ...options,
    });
    let output = '';
    let exited: string | undefined;
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-65536);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('error', (error) => {
      exited ??= error.message;
    });
    child.on('exit', (code, signal) => {
      exited ??= signal ?? `code ${code}`;
    });
    return { process: child, output: () => output, exited: () => exited };
  }
}

/** The last lines a server printed, for an error message. */
function tail(output: string): string {
  const lines = output.trim().split('\n').slice(-5).join('\n');
  return lines === '' ? '(no output)' : lines;
}
