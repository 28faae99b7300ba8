import { CommandProcesses } from './command-processes.js';
import { HAS_PROC, listStats, readStat, type ProcStat } from './proc-stat.js';

/** Rounds of "signal, look again" that catch a child forked while the previous round was sent. */
const ROUNDS = 3;

/**
 * The command and its descendants when it shares leasehold's process group (`--foreground`), so
 * the group cannot be signalled without signalling leasehold and whoever started it. Found through
 * /proc parent links; every process once seen is remembered (by pid and start time), so one whose
 * parent exited is still reached. What detached itself before it was seen (a daemon that double
 * forks at once) is not. Without /proc only the command itself is reached.
 */
export class ProcessTree extends CommandProcesses {
  /** pid → start time of every process seen in the tree. */
  private readonly known = new Map<number, string>();

  constructor(readonly pid: number) {
    super();
    this.known.set(pid, readStat(pid)?.startTime ?? '');
  }

  signal(signal: NodeJS.Signals): boolean {
    const sent = new Set<number>();
    for (let round = 0; round < ROUNDS; round++) {
      const fresh = this.members().filter((s) => !sent.has(s.pid));
      if (fresh.length === 0) break;
      for (const { pid } of fresh) {
        try {
          process.kill(pid, signal);
          sent.add(pid);
        } catch {
          sent.add(pid); // exited meanwhile
        }
      }
    }
    return sent.size > 0;
  }

  alive(): boolean {
    return this.members().some((s) => s.state !== 'Z');
  }

  /** The live processes of the tree, after adding the descendants of every one known. */
  private members(): ProcStat[] {
    if (!HAS_PROC) return this.rootOnly();
    const stats = listStats();
    const byPid = new Map(stats.map((s) => [s.pid, s]));
    for (const [pid, start] of this.known) {
      const stat = byPid.get(pid);
      if (!stat || (start !== '' && stat.startTime !== start)) this.known.delete(pid);
    }
    for (let grew = true; grew;) {
      grew = false;
      for (const s of stats) {
        if (!this.known.has(s.pid) && this.known.has(s.ppid)) {
          this.known.set(s.pid, s.startTime);
          grew = true;
        }
      }
    }
    return [...this.known.keys()].map((pid) => byPid.get(pid)!);
  }

  private rootOnly(): ProcStat[] {
    try {
      process.kill(this.pid, 0);
    } catch {
      return [];
    }
    const s = { pid: this.pid, state: 'R', ppid: 0, pgrp: 0, session: 0, tpgid: -1, startTime: '' };
    return [s];
  }
}
