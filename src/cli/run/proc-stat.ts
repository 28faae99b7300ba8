import { readdirSync, readFileSync } from 'node:fs';

/** What `leasehold run` reads of a process from /proc/<pid>/stat (Linux only). */
export interface ProcStat {
  pid: number;
  /** `R`, `S`, `T` (stopped), `Z` (zombie), … */
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  /** The foreground process group of the process's controlling terminal; -1 without one. */
  tpgid: number;
  /** Clock ticks after boot: with the pid, it names one process even once the pid is reused. */
  startTime: string;
}

/** Whether /proc describes processes here. Elsewhere callers fall back to kill(2) on known pids. */
export const HAS_PROC = process.platform === 'linux';

/** One process's stat, or undefined when it is gone (or /proc cannot be read). */
export function readStat(pid: number | 'self'): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  return parseStat(text);
}

/** Every process /proc shows; empty when it cannot be read. */
export function listStats(): ProcStat[] {
  let names: string[];
  try {
    names = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const stats: ProcStat[] = [];
  for (const name of names) {
    const stat = readStat(Number(name)); // undefined: it exited while we looked
    if (stat) stats.push(stat);
  }
  return stats;
}

/** "pid (comm) state ppid pgrp session tty_nr tpgid … starttime …"; comm may hold spaces and parentheses. */
function parseStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  if (close === -1) return undefined;
  const fields = text.slice(close + 2).split(' ');
  return {
    pid: Number.parseInt(text, 10),
    state: fields[0] ?? '',
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    session: Number(fields[3]),
    tpgid: Number(fields[5]),
    startTime: fields[19] ?? '',
  };
}
