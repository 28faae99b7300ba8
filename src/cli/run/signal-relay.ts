/** The signals `leasehold run` handles itself instead of dying: it passes them on to the command. */
export const RELAYED_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/**
 * Catches SIGTERM, SIGINT and SIGHUP for the whole run and hands each to whatever `onSignal` is at
 * that moment: abort the wait for the lease, forward to the command, or nothing while releasing.
 * Installed once, so there is no instant in which a signal would kill leasehold with the lease held.
 */
export class SignalRelay {
  onSignal: (signal: NodeJS.Signals) => void = () => undefined;
  private readonly listener = (signal: NodeJS.Signals): void => this.onSignal(signal);

  constructor() {
    for (const signal of RELAYED_SIGNALS) process.on(signal, this.listener);
  }

  dispose(): void {
    for (const signal of RELAYED_SIGNALS) process.removeListener(signal, this.listener);
  }
}
