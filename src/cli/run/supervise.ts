import { spawn } from 'node:child_process';
import type { Clock, HeldLease } from '../../index.js';
import { RUN_EXIT, signalExitCode } from './exit-codes.js';
import { JobControl } from './job-control.js';
import { LossHandler } from './loss-handler.js';
import { ProcessGroup } from './process-group.js';
import { ProcessTree } from './process-tree.js';
import type { SignalRelay } from './signal-relay.js';
import { inTerminalForeground } from './terminal.js';

export interface SuperviseOptions {
  /** The command and its arguments, run without a shell. */
  argv: readonly string[];
  /** How long the command gets between SIGTERM and SIGKILL once the lease is lost. */
  graceMs: number;
  /** Run the command in leasehold's process group and session, where it keeps the terminal. */
  foreground: boolean;
  signals: SignalRelay;
  /** The clock of the client holding the lease: `held.validUntil` is on its monotonic time. */
  clock: Clock;
  /** Writes one line to stderr. */
  say: (line: string) => void;
  /** More environment for the command (the lease data's file). */
  env?: Record<string, string>;
}

export interface Outcome {
  /** The exit code `leasehold run` ends with. */
  code: number;
  /** The lease was lost while the command ran. */
  lost: boolean;
}

/**
 * Runs the command while `held` lasts, with the fencing token in its environment, in a session and
 * process group of its own (with `foreground`, in leasehold's). Signals leasehold receives go to
 * the command. Ctrl-Z stops the command, then leasehold; when continued, leasehold continues the
 * command only if the lease is still valid. The moment the lease is lost the command gets SIGTERM,
 * and SIGKILL after the grace. Resolves once nothing of the command is left running.
 */
export async function supervise(held: HeldLease, options: SuperviseOptions): Promise<Outcome> {
  const { argv, graceMs, foreground, signals, clock, say } = options;
  const [file, ...args] = argv as [string, ...string[]];
  if (!held.isValid()) {
    const reason: unknown = held.signal.reason ?? 'its validity deadline passed';
    say(
      `leasehold: LEASE_LOST: ${reason instanceof Error ? reason.message : String(reason)}; not starting the command`,
    );
    return { code: RUN_EXIT.lost, lost: true };
  }
  // A signal that comes while the command is starting is delivered to it once it has started.
  let pending: NodeJS.Signals | undefined;
  signals.onSignal = (signal) => (pending = signal);
  let loss: LossHandler | undefined;
  // Installed before the spawn, so that no stop signal can stop leasehold alone while the command
  // runs. spawn() is synchronous: no listener runs before `loss` is set.
  const jobs = new JobControl({
    stopCommand: () => loss?.processes.signal('SIGSTOP'),
    resumed: () => loss?.resumed(),
    continued: () => loss?.check(),
  });
  try {
    const child = spawn(file, args, {
      stdio: 'inherit',
      // By default a session and process group of its own: a stop reaches everything it started,
      // and a Ctrl-C at a terminal reaches leasehold, which forwards it. Node cannot make a new
      // group without a new session, so the command then has no controlling terminal.
      detached: !foreground,
      env: {
        ...process.env,
        LEASEHOLD_RESOURCE: held.resource,
        LEASEHOLD_OWNER: held.owner,
        LEASEHOLD_TOKEN: String(held.token),
        LEASEHOLD_PERMIT: String(held.permit),
        ...options.env,
      },
    });
    const exited = new Promise<number>((resolve) => {
      child.once('exit', (code, signal) => resolve(code ?? signalExitCode(signal ?? 'SIGKILL')));
    });
    if (child.pid !== undefined) {
      const processes = foreground ? new ProcessTree(child.pid) : new ProcessGroup(child.pid);
      loss = new LossHandler(processes, { held, graceMs, clock, say });
    }
    const started = await new Promise<Error | undefined>((resolve) => {
      child.once('spawn', () => resolve(undefined));
      child.once('error', resolve);
    });
    if (started || !loss) {
      signals.onSignal = () => undefined;
      const code = (started as NodeJS.ErrnoException | undefined)?.code;
      say(`leasehold: cannot run ${JSON.stringify(file)}: ${started?.message ?? 'no process'}`);
      return { code: code === 'ENOENT' ? RUN_EXIT.notFound : RUN_EXIT.cannotRun, lost: false };
    }
    const { processes } = loss;
    child.on('error', () => undefined); // a later error only concerns signalling a process that is gone

    signals.onSignal = (signal) => {
      // With --foreground, a Ctrl-C typed at the terminal has already reached the command.
      if (foreground && signal === 'SIGINT' && inTerminalForeground()) return;
      processes.signal(signal);
    };
    if (pending) processes.signal(pending); // it came before the command could have seen it
    const code = await exited;
    if (loss.lost) {
      await processes.stop(graceMs);
      return { code: RUN_EXIT.lost, lost: true };
    }
    // Nothing started under the lease may outlive it: stop what the command left behind.
    if (processes.alive()) {
      say(
        `leasehold: the command left processes ${foreground ? 'running' : 'in its group'}; stopping them before releasing`,
      );
      await processes.stop(graceMs);
    }
    return { code, lost: false };
  } finally {
    loss?.dispose();
    jobs.dispose();
    signals.onSignal = () => undefined;
  }
}
