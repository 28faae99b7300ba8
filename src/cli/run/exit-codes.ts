import { constants } from 'node:os';

/** Exit codes of `leasehold run` that are not the command's own. */
export const RUN_EXIT = Object.freeze({
  /** The lease was held by someone else until `--wait` ran out (sysexits EX_TEMPFAIL: try later). */
  unavailable: 75,
  /** The lease was lost while the command ran; the command was stopped (sysexits EX_SOFTWARE). */
  lost: 70,
  /** The command exists but could not be started (as shells and env(1) report it). */
  cannotRun: 126,
  /** The command was not found (as shells and env(1) report it). */
  notFound: 127,
});

/** `128 + N` for signal N, as shells report a process that a signal ended. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}
