import { CommandProcesses } from './command-processes.js';
import { HAS_PROC, listStats } from './proc-stat.js';

/**
 * A process group started by `leasehold run`: the command and everything it started that stayed in
 * its group, so a stop reaches a whole shell pipeline and not only its first process.
 */
export class ProcessGroup extends CommandProcesses {
  constructor(readonly pgid: number) {
    super();
  }

  signal(signal: NodeJS.Signals): boolean {
    try {
      process.kill(-this.pgid, signal);
      return true;
    } catch {
      return false;
    }
  }

  alive(): boolean {
    try {
      process.kill(-this.pgid, 0);
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
    // kill(2) also counts zombies, which an init that does not reap (in some containers) keeps forever.
    if (!HAS_PROC) return true;
    const stats = listStats();
    return stats.length === 0 || stats.some((s) => s.pgrp === this.pgid && s.state !== 'Z');
  }
}
