// CPU time of a server's whole process tree (PostgreSQL forks a backend per connection), read
// from /proc: what a contender costs the server, beside what it costs this process.
import { readdirSync, readFileSync } from 'node:fs';

const TICK_US = 10_000; // USER_HZ is 100 on Linux

function stat(pid) {
  return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
}

function tree(root) {
  const children = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(stat(entry)[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]) ?? []));
  return out;
}

/**
 * User + system CPU of `pid` (or of each of several pids) and their descendants, in µs; 0 without
 * a pid or without /proc.
 */
export function treeCpuUs(pid) {
  if (!pid) return 0;
  let ticks = 0;
  try {
    for (const p of [pid].flat().flatMap(tree)) {
      try {
        const fields = stat(p);
        ticks += Number(fields[11]) + Number(fields[12]);
      } catch {
        // gone meanwhile
      }
    }
  } catch {
    return 0;
  }
  return ticks * TICK_US;
}
