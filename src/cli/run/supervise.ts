import { spawn } from 'node:child_process';
import type { HeldLease } from '../../index.js';
import { formatDuration } from '../duration.js';
import { RUN_EXIT, signalExitCode } from './exit-codes.js';
import { ProcessGroup } from './process-group.js';
import type { SignalRelay } from './signal-relay.js';

export interface SuperviseOptions {
  /** The command and its arguments, run without a shell. */
  argv: readonly string[];
  /** How long the command gets between SIGTERM and SIGKILL once the lease is lost. */
  graceMs: number;
  signals: SignalRelay;
  /** Writes one line to stderr. */
  say: (line: string) => void;
}

export interface Outcome {
  /** The exit code `leasehold run` ends with. */
  code: number;
  /** The lease was lost while the command ran. */
  lost: boolean;
}

/**
 * Runs the command in its own process group while `held` lasts, with the fencing token in its
 * environment. Signals leasehold receives go to the group. The moment the lease is lost the group
 * gets SIGTERM, and SIGKILL after the grace. Resolves once nothing of the group is left running.
 */
export async function supervise(held: HeldLease, options: SuperviseOptions): Promise<Outcome> {
  const { argv, graceMs, signals, say } = options;
  const [file, ...args] = argv as [string, ...string[]];
  const lostLine = (reason: unknown): string =>
    `leasehold: LEASE_LOST: ${reason instanceof Error ? reason.message : String(reason)}`;
  if (!held.isValid()) {
    say(
      `${lostLine(held.signal.reason ?? 'its validity deadline passed')}; not starting the command`,
    );
    return { code: RUN_EXIT.lost, lost: true };
  }
  // A signal that comes while the command is starting is delivered to it once it has started.
  let pending: NodeJS.Signals | undefined;
  signals.onSignal = (signal) => (pending = signal);
  const child = spawn(file, args, {
    stdio: 'inherit',
    // Its own session and process group: a stop reaches everything it started, and a Ctrl-C in a
    // terminal reaches leasehold, which forwards it, rather than both at once.
    detached: true,
    env: {
      ...process.env,
      LEASEHOLD_RESOURCE: held.resource,
      LEASEHOLD_OWNER: held.owner,
      LEASEHOLD_TOKEN: String(held.token),
    },
  });
  let lost = false;
  const exited = new Promise<Outcome>((resolve) => {
    child.once('exit', (code, signal) =>
      resolve({ code: code ?? signalExitCode(signal ?? 'SIGKILL'), lost }),
    );
  });
  const started = await new Promise<Error | undefined>((resolve) => {
    child.once('spawn', () => resolve(undefined));
    child.once('error', resolve);
  });
  if (started) {
    signals.onSignal = () => undefined;
    const code = (started as NodeJS.ErrnoException).code;
    say(`leasehold: cannot run ${JSON.stringify(file)}: ${started.message}`);
    return { code: code === 'ENOENT' ? RUN_EXIT.notFound : RUN_EXIT.cannotRun, lost: false };
  }
  const group = new ProcessGroup(child.pid!);
  child.on('error', () => undefined); // a later error only concerns signalling a process that is gone

  const onLost = (): void => {
    lost = true;
    say(
      `${lostLine(held.signal.reason)}; stopping the command: SIGTERM now, SIGKILL in ${formatDuration(graceMs)}`,
    );
    void group.stop(graceMs);
  };
  signals.onSignal = (signal) => group.signal(signal);
  if (pending) group.signal(pending);
  held.signal.addEventListener('abort', onLost, { once: true });
  if (held.signal.aborted) onLost();
  let outcome: Outcome;
  try {
    outcome = await exited;
  } finally {
    held.signal.removeEventListener('abort', onLost);
    signals.onSignal = () => undefined;
  }
  if (outcome.lost) {
    await group.stop(graceMs);
    return { code: RUN_EXIT.lost, lost: true };
  }
  // Nothing started under the lease may outlive it: stop what the command left in its group.
  if (group.alive()) {
    say(`leasehold: the command left processes in its group; stopping them before releasing`);
    await group.stop(graceMs);
  }
  return outcome;
}
