import { readStat } from './proc-stat.js';

/**
 * Whether leasehold's process group is the foreground group of its controlling terminal. Then a
 * Ctrl-C typed there went to every process of the group, a `--foreground` command included, so
 * forwarding it would deliver it twice. False when unknown (no /proc, no terminal).
 */
export function inTerminalForeground(): boolean {
  const self = readStat('self');
  return self !== undefined && self.tpgid > 0 && self.tpgid === self.pgrp;
}
