/**
 * The stop signals leasehold turns into "stop the command, then stop leasehold". SIGTTOU is left
 * alone: the terminal sends it when leasehold writes from the background under `stty tostop`, and
 * a caught SIGTTOU makes the kernel retry that write forever with the event loop stuck inside it
 * (no heartbeat, no deadline timer). Uncaught, it just stops leasehold, as a SIGSTOP would.
 * leasehold never reads the terminal, so a SIGTTIN can only come from kill(1).
 */
export const STOP_SIGNALS = ['SIGTSTP', 'SIGTTIN'] as const;

export interface JobControlHooks {
  /** Stops every process of the command; it must not run while leasehold is stopped. */
  stopCommand(): void;
  /** leasehold stopped itself and was continued: let the command go on, or end it. */
  resumed(): void;
  /** Any SIGCONT, including one after a SIGSTOP that leasehold could not see coming. */
  continued(): void;
}

/**
 * Ctrl-Z for a command in a process group other than leasehold's, as a shell does it for a job:
 * stop the command first, then leasehold itself. SIGSTOP to itself cannot be caught, so leasehold
 * stops inside `process.kill` and carries on from there when continued, before any timer or other
 * callback runs: `resumed` decides about the command before anything else happens.
 */
export class JobControl {
  private readonly onStop = (): void => {
    this.hooks.stopCommand();
    process.kill(process.pid, 'SIGSTOP');
    this.hooks.resumed();
  };
  private readonly onContinue = (): void => this.hooks.continued();

  constructor(private readonly hooks: JobControlHooks) {
    for (const signal of STOP_SIGNALS) process.on(signal, this.onStop);
    process.on('SIGCONT', this.onContinue);
  }

  /** Gives the stop signals their default action back: with no command, stopping leasehold is harmless. */
  dispose(): void {
    for (const signal of STOP_SIGNALS) process.removeListener(signal, this.onStop);
    process.removeListener('SIGCONT', this.onContinue);
  }
}
