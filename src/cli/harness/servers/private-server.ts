import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { appendFileSync, rmSync } from 'node:fs';
import { freezeTree, processesIn, processTree, signalAll, untilEnded } from './process-tree.js';
import { watchFolder } from './watchdog.js';

/** What to run to start a server: the file, its arguments and spawn options. */
export interface ServerCommand {
  file: string;
  args: string[];
  options?: SpawnOptions;
}

/** How a `PrivateServer` owns its folder and processes. */
export interface PrivateServerOptions {
  /**
   * Whether the folder is the server's own, removed by `stop` (else the caller's, which may hold
   * other servers' folders too). @default true
   */
  readonly ownsDir?: boolean;
  /**
   * A separate watchdog process that kills every process working in the folder and removes it
   * when this process ends without stopping the server (even by SIGKILL). @default true
   */
  readonly watchdog?: boolean;
  /**
   * Each process in its own process group, so a Ctrl-C at the terminal reaches this process and
   * not the server. @default true
   */
  readonly detached?: boolean;
  /** A file the server's output is appended to as it comes, beside the tail kept for messages. */
  readonly outputFile?: string;
  /**
   * A command that runs the server's processes in a setting of their own and then executes
   * them, such as `ip netns exec NAME` (the pid stays the server's). @default none
   */
  readonly wrap?: readonly string[];
}

/** A server process, keeping the tail of its output for error messages. */
interface ServerChild {
  process: ChildProcess;
  output: () => string;
  exited: () => string | undefined;
}

/**
 * A store server started from the installed binary: a private instance on a 127.0.0.1 port, with
 * its data in a temporary folder. It can be paused (SIGSTOP of its whole process tree), killed and
 * started again on the same port and folder, shut down and started again, and stopped for good,
 * its folder removed, whichever way this process ends.
 */
export abstract class PrivateServer {
  /** The program, for messages (`redis-server`). */
  abstract readonly program: string;
  /** The URL a store opens. */
  abstract get url(): string;
  /** The port clients connect to. */
  abstract get port(): number;
  /** How to start the server process on its folder and port. */
  protected abstract command(): ServerCommand;
  /** Whether the process answers, given what it has printed so far. */
  protected abstract isReady(output: string): Promise<boolean> | boolean;
  /** The signal that shuts the server down cleanly. */
  protected readonly stopSignal: NodeJS.Signals = 'SIGTERM';
  /** How often `untilReady` asks `isReady`. */
  protected readonly readyPollMs: number = 25;

  private child: ServerChild | undefined;
  /** A one-off helper process running to its end (initdb). */
  private helper: ServerChild | undefined;
  private stopped = false;
  private readonly watchdog: { dismiss: () => void } | undefined;
  /** Whether the folder is the server's own, removed by `stop`. */
  protected readonly ownsDir: boolean;
  private readonly detached: boolean;
  private readonly outputFile: string | undefined;
  private readonly wrap: readonly string[];

  constructor(
    /** The server's folder (its working directory), removed by `stop` when it is its own. */
    readonly dir: string,
    options: PrivateServerOptions = {},
  ) {
    this.ownsDir = options.ownsDir ?? true;
    this.detached = options.detached ?? true;
    this.outputFile = options.outputFile;
    this.wrap = options.wrap ?? [];
    this.watchdog = (options.watchdog ?? true) ? watchFolder(dir) : undefined;
  }

  /** The pid of the running server, if it runs. */
  get pid(): number | undefined {
    return this.child?.process.pid;
  }

  /** Whether a server process was started, has not ended, and was neither killed nor stopped. */
  get running(): boolean {
    return this.child !== undefined && this.child.exited() === undefined;
  }

  /** What the running server has printed lately (the last 64 KiB), `''` when none runs. */
  output(): string {
    return this.child?.output() ?? '';
  }

  /** Work done once before the first start (PostgreSQL's initdb). */
  async prepare(): Promise<void> {}

  /** Starts the server and waits until it answers; throws with its last output if it cannot. */
  async launch(timeoutMs = 20_000): Promise<void> {
    this.spawnServer();
    await this.untilReady(timeoutMs);
  }

  /** Starts the server process without waiting for it (the members of a cluster start together). */
  spawnServer(): void {
    if (this.stopped) throw new Error(`${this.program} was stopped`);
    const { file, args, options } = this.command();
    this.child = this.spawn(file, args, { cwd: this.dir, ...options });
  }

  /**
   * Waits until the started server answers. Throws with its last output when it exits first, and
   * kills it when it does not answer within `timeoutMs`.
   */
  async untilReady(timeoutMs = 20_000): Promise<void> {
    const child = this.child;
    if (!child) throw new Error(`${this.program} is not running`);
    const end = Date.now() + timeoutMs;
    for (;;) {
      const exited = child.exited();
      if (exited !== undefined)
        throw new Error(
          `${this.program} exited (${exited}) while starting: ${tail(child.output())}`,
        );
      if (this.stopped) throw new Error(`${this.program} was stopped while starting`);
      if (this.child !== child) throw new Error(`${this.program} was killed while starting`);
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
      await new Promise((r) => setTimeout(r, this.readyPollMs));
    }
  }

  /** Runs a helper program to its end in the server's folder; throws with its output if it fails. */
  async runToEnd(file: string, args: string[], options: SpawnOptions = {}): Promise<string> {
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
    return helper.output();
  }

  /**
   * SIGSTOP of every process of the server: connections stay open, nothing answers. Returns once
   * every process of the tree shows as stopped (at most half a second), so no call made after it
   * can still be served by a thread that had not stopped yet.
   */
  pause(): void {
    const pid = this.child?.process.pid;
    if (pid) freezeTree(pid);
  }

  /** SIGCONT of every process of the server. */
  resume(): void {
    if (this.child?.process.pid) signalAll(processTree(this.child.process.pid), 'SIGCONT');
  }

  /**
   * SIGKILL of every process of the server (a crash); waits until all have ended. The folder
   * stays for `launch` or `restart`.
   */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    const pid = child?.process.pid;
    if (child && pid !== undefined && child.exited() === undefined) {
      // Frozen first: a process forked while the tree is listed would outlive the kill.
      const pids = freezeTree(pid);
      signalAll(pids, 'SIGKILL');
      // A new PostgreSQL refuses to start while a backend of the old one still holds its memory.
      if (!(await untilEnded(pids, 10_000)))
        throw new Error(`${this.program} (pid ${pid}) did not end after SIGKILL`);
    }
    await this.killStrays();
    closeOutput(child);
  }

  /**
   * SIGKILL of any process still working in the server's own folder (Linux): one a kill or a
   * shutdown missed would hold the server's memory, keeping a new server from starting, and its
   * output, keeping this process from exiting. Throws when one does not end.
   */
  private async killStrays(): Promise<void> {
    if (!this.ownsDir) return;
    const strays = processesIn(this.dir);
    if (strays.length === 0) return;
    signalAll(strays, 'SIGKILL');
    if (!(await untilEnded(strays, 10_000)))
      throw new Error(
        `processes ${strays.join(', ')} left in ${this.dir} by ${this.program} did not end after SIGKILL`,
      );
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
   * Shuts the server down (its clean-stop signal, SIGKILL of the tree after `graceMs`) and waits
   * until every process of it has ended. The folder stays: `launch` starts it again.
   */
  async shutdown(graceMs = 5000): Promise<void> {
    const child = this.child;
    const pid = child?.process.pid;
    if (child && pid !== undefined && child.exited() === undefined) {
      const pids = processTree(pid);
      signalAll(pids, 'SIGCONT');
      signalAll([pid], this.stopSignal);
      if (!(await untilEnded([pid], graceMs))) signalAll(freezeTree(pid), 'SIGKILL');
      await untilEnded(pids, graceMs);
    }
    this.child = undefined;
    await this.killStrays();
    closeOutput(child);
  }

  /**
   * Shuts the server down for good and removes its folder when it is its own. Safe to call more
   * than once.
   */
  async stop(graceMs = 5000): Promise<void> {
    this.stopped = true;
    this.killHelper();
    await this.shutdown(graceMs);
    this.removeFolder();
  }

  /** The synchronous last resort (process exit): SIGKILL of the tree and removal of the folder. */
  killNow(): void {
    this.stopped = true;
    this.killHelper();
    const pid = this.child?.process.pid;
    if (pid !== undefined && this.child?.exited() === undefined)
      signalAll(freezeTree(pid, 100), 'SIGKILL');
    this.child = undefined;
    if (this.ownsDir) signalAll(processesIn(this.dir), 'SIGKILL');
    this.removeFolder();
  }

  private killHelper(): void {
    const pid = this.helper?.process.pid;
    if (pid !== undefined) signalAll(processTree(pid), 'SIGKILL');
  }

  private removeFolder(): void {
    if (this.ownsDir) {
      try {
        rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
      } catch {
        // a process still ending wrote into it; the folder is in the system temp dir
      }
    }
    this.watchdog?.dismiss();
  }

  /** Spawns a process, keeping the tail of its output (and all of it in `outputFile`). */
  protected spawn(file: string, args: string[], options: SpawnOptions): ServerChild {
    const [wrapper, ...before] = this.wrap;
    const argv = wrapper === undefined ? [file, ...args] : [wrapper, ...before, file, ...args];
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: this.detached,
      ...options,
    });
    let output = '';
    let exited: string | undefined;
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-65536);
      if (this.outputFile) appendFileSync(this.outputFile, chunk);
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

/**
 * Closes this process's ends of a killed or stopped server's output pipes: a process of it that
 * outlived it must not keep this process from exiting.
 */
function closeOutput(child: ServerChild | undefined): void {
  child?.process.stdout?.destroy();
  child?.process.stderr?.destroy();
}

/** The last lines a server printed, for an error message. */
function tail(output: string): string {
  const lines = output.trim().split('\n').slice(-5).join('\n');
  return lines === '' ? '(no output)' : lines;
}
