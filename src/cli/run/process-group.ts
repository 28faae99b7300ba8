import { readdirSync, readFileSync } from 'node:fs';

const POLL_MS = 50;
/** How long processes get to disappear after SIGKILL before we stop waiting for them. */
const AFTER_KILL_MS = 2000;

/**
 * A process group started by `leasehold run`: the command and everything it started that stayed in
 * its group, so a stop reaches a whole shell pipeline and not only its first process.
 */
export class ProcessGroup {
  private stopping: Promise<void> | undefined;

  constructor(readonly pgid: number) {}

  /** Sends `signal` to every process of the group; `false` when the group is gone. */
  signal(signal: NodeJS.Signals): boolean {
    try {
      process.kill(-this.pgid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** Whether any process of the group still runs (zombies do not count). */
  alive(): boolean {
    try {
      process.kill(-this.pgid, 0);
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
    // kill(2) also counts zombies, which an init that does not reap (in some containers) keeps forever.
    return process.platform !== 'linux' || hasLiveMember(this.pgid);
  }

  /** SIGTERM now, SIGKILL to whatever is left after `graceMs`; resolves once the group is gone. */
  stop(graceMs: number): Promise<void> {
    this.stopping ??= this.terminate(graceMs);
    return this.stopping;
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

/** Whether a process that is not a zombie has `pgid` as its process group, read from /proc. */
function hasLiveMember(pgid: number): boolean {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return true;
  }
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // "pid (comm) state ppid pgrp …"; comm may contain spaces and parentheses.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') return true;
  }
  return false;
}
