import { execFileSync } from 'node:child_process';
import {
  accessSync,
  constants,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/** Every pid in the process tree under `pid`, `pid` first (PostgreSQL backends are their own groups). */
export function processTree(pid: number): number[] {
  let table: string;
  try {
    table = execFileSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' });
  } catch {
    return [pid];
  }
  const children = new Map<number, number[]>();
  for (const line of table.trim().split('\n')) {
    const [p, pp] = line.trim().split(/\s+/).map(Number);
    if (p === undefined || pp === undefined) continue;
    children.set(pp, [...(children.get(pp) ?? []), p]);
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    out.push(p);
    for (const c of children.get(p) ?? []) walk(c);
  };
  walk(pid);
  return out;
}

/** Sends `signal` to each pid, ignoring those already gone. */
export function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const p of pids) {
    try {
      process.kill(p, signal);
    } catch {
      // already gone
    }
  }
}

/** Whether `pid` has ended (a zombie waiting for its reaper counts as ended). */
export function hasEnded(pid: number): boolean {
  try {
    return /^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  }
}

/** Waits until every pid has ended; false when `timeoutMs` passed first. */
export async function untilEnded(pids: readonly number[], timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (!pids.every(hasEnded)) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/** Whether `pid` is stopped (or gone): its state in /proc is T or t (Z or missing: gone). */
export function isStopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'T' || state === 't' || state === 'Z';
  } catch {
    return true;
  }
}

/**
 * Blocks until every pid shows as stopped, at most `timeoutMs` (a SIGSTOP lands on each thread
 * a moment after it was sent). Synchronous, so a pause is complete when the call returns.
 */
export function untilStopped(pids: readonly number[], timeoutMs: number): void {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until && !pids.every(isStopped))
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
}

/**
 * SIGSTOP of the whole tree under `pid` with no window for a child to escape it, and its pids.
 * Listing the tree and then signalling it lets a process forked in between run on (PostgreSQL's
 * postmaster forks a backend per connection, in bursts as a paused server resumes), and after a
 * SIGKILL such a backend outlives its server, holding its shared memory and its output. So the root
 * stops first, then the tree is listed and stopped again until no new pid shows.
 */
export function freezeTree(pid: number, timeoutMs = 500): number[] {
  signalAll([pid], 'SIGSTOP');
  untilStopped([pid], timeoutMs);
  const pids = new Set<number>();
  for (let round = 0; round < 10; round++) {
    const listed = processTree(pid).filter((p) => !pids.has(p));
    if (listed.length === 0 && round > 0) break;
    for (const p of listed) pids.add(p);
    signalAll(listed, 'SIGSTOP');
    untilStopped(listed, timeoutMs);
  }
  return [...pids];
}

/**
 * The pids (other than this process) whose working folder is `dir` or lies in it: what a server
 * started there left running, its own children included (PostgreSQL's backends work in its data
 * folder). Linux (/proc); elsewhere none.
 */
export function processesIn(dir: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid);
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${entry}/cwd`);
    } catch {
      continue; // ended meanwhile, or not ours to read
    }
    // A folder already removed reads " (deleted)" after its path.
    const path = cwd.endsWith(' (deleted)') ? cwd.slice(0, -' (deleted)'.length) : cwd;
    if ((path === dir || path.startsWith(`${dir}/`)) && !hasEnded(Number(entry)))
      found.push(Number(entry));
  }
  return found;
}

/** The path of an executable `name` on `PATH`, or `undefined`. */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A TCP port on 127.0.0.1 that was free a moment ago (listen on 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no free port on 127.0.0.1')),
      );
    });
  });
}

/**
 * A fresh folder for a server's data: on /dev/shm when `inMemory` and there is one (etcd and
 * ZooKeeper fsync every write; in memory that costs nothing), else in the system temp dir.
 */
export function serverFolder(prefix: string, inMemory = false): string {
  return mkdtempSync(join(inMemory && existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), prefix));
}
