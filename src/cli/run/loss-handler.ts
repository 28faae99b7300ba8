import { ErrorCode, LeaseError, type Clock, type HeldLease } from '../../index.js';
import { formatDuration } from '../duration.js';
import type { CommandProcesses } from './command-processes.js';
import { quoted } from '../escape.js';

export interface LossHandlerOptions {
  held: HeldLease;
  /** How long the command may run past the lease's end, between SIGTERM and SIGKILL. */
  graceMs: number;
  /** The clock `held.validUntil` is measured on. */
  clock: Clock;
  say: (line: string) => void;
}

/**
 * Ends the command when the lease ends under it. The grace counts from the lease's deadline, not
 * from when leasehold noticed: a leasehold frozen past the deadline (SIGSTOP, a stop it cannot
 * catch) finds the grace spent and kills the command at once instead of granting it a new one. A
 * command leasehold stopped itself (Ctrl-Z) is continued only while the lease is valid.
 */
export class LossHandler {
  /** The lease ended while the command ran. */
  lost = false;
  private readonly onAbort = (): void => this.lose(this.options.held.signal.reason);

  constructor(
    readonly processes: CommandProcesses,
    private readonly options: LossHandlerOptions,
  ) {
    const { signal } = options.held;
    signal.addEventListener('abort', this.onAbort, { once: true });
    if (signal.aborted) this.onAbort();
  }

  /**
   * leasehold was continued after stopping the command and itself: continue the command if the
   * lease is still valid, else kill it as it is, stopped. It runs again only under a valid lease.
   */
  resumed(): void {
    if (!this.lost && this.options.held.isValid()) {
      this.processes.signal('SIGCONT');
      return;
    }
    if (!this.lost) {
      this.lost = true;
      this.options.say(
        `${lostLine(this.lapsed())}; killing the stopped command (SIGKILL) without continuing it`,
      );
    }
    void this.processes.kill();
  }

  /** After any SIGCONT: a deadline that passed while leasehold was frozen is a loss now. */
  check(): void {
    if (!this.lost && !this.options.held.isValid())
      this.lose(this.options.held.signal.aborted ? this.options.held.signal.reason : this.lapsed());
  }

  dispose(): void {
    this.options.held.signal.removeEventListener('abort', this.onAbort);
  }

  private lose(reason: unknown): void {
    if (this.lost) return;
    this.lost = true;
    const { held, graceMs, clock, say } = this.options;
    const overdueMs = clock.monotonic() - held.validUntil;
    const leftMs = graceMs - Math.max(0, overdueMs);
    if (overdueMs > 0 && leftMs <= 0) {
      say(
        `${lostLine(reason)}; stopping the command: SIGKILL now, the lease ended ${formatDuration(overdueMs)} ago, more than the ${formatDuration(graceMs)} grace`,
      );
      void this.processes.kill();
      return;
    }
    say(
      `${lostLine(reason)}; stopping the command: SIGTERM now, SIGKILL in ${formatDuration(leftMs)}`,
    );
    void this.processes.stop(leftMs);
  }

  private lapsed(): LeaseError {
    const { held } = this.options;
    return new LeaseError(
      ErrorCode.LEASE_LOST,
      `lease on ${quoted(held.resource)} (token ${held.token}) lost: its validity deadline passed while leasehold was stopped`,
      { resource: held.resource, retryable: false },
    );
  }
}

function lostLine(reason: unknown): string {
  return `leasehold: LEASE_LOST: ${reason instanceof Error ? reason.message : String(reason)}`;
}
