const POLL_MS = 50;
/** How long processes get to disappear after SIGKILL before we stop waiting for them. */
const AFTER_KILL_MS = 2000;

/**
 * The processes of the command `leasehold run` started: its process group, or (with
 * `--foreground`) the command and its descendants. Stopping them is the same either way.
 */
export abstract class CommandProcesses {
  private ending: Promise<void> | undefined;

  /** Sends `signal` to every process; `false` when none is left to receive it. */
  abstract signal(signal: NodeJS.Signals): boolean;

  /** Whether any of the processes still runs or is stopped (zombies do not count). */
  abstract alive(): boolean;

  /** SIGTERM now, SIGKILL to whatever is left after `graceMs`; resolves once they are gone. */
  stop(graceMs: number): Promise<void> {
    this.ending ??= this.terminate(graceMs);
    return this.ending;
  }

  /**
   * SIGKILL now, even while a `stop` is waiting out its grace; resolves once they are gone. The one
   * way to end a stopped process without letting it run again: SIGTERM would wait for a SIGCONT.
   */
  kill(): Promise<void> {
    this.signal('SIGKILL');
    this.ending ??= this.gone(AFTER_KILL_MS).then(() => undefined);
    return this.ending;
  }

  private async terminate(graceMs: number): Promise<void> {
    this.signal('SIGTERM');
    if (await this.gone(graceMs)) return;
    this.signal('SIGKILL');
    await this.gone(AFTER_KILL_MS);
  }

  private async gone(withinMs: number): Promise<boolean> {
    const end = performance.now() + withinMs;
    for (;;) {
      if (!this.alive()) return true;
      if (performance.now() >= end) return false;
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(POLL_MS, end - performance.now())),
      );
    }
  }
}
