import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Run by a separate process: when its stdin closes (verify ended, even by SIGKILL), it SIGKILLs
 * every process working in the server's folder (each server runs there, and PostgreSQL's backends
 * inherit it) and removes the folder. Linux (/proc); elsewhere it only removes the folder.
 */
const SWEEP = `
const fs = require('node:fs');
const dir = process.argv[1];
const sweep = () => {
  let pids = [];
  try { pids = fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p) && Number(p) !== process.pid); } catch {}
  for (const pid of pids) {
    let cwd;
    try { cwd = fs.readlinkSync('/proc/' + pid + '/cwd'); } catch { continue; }
    if (cwd === dir || cwd.startsWith(dir + '/')) try { process.kill(Number(pid), 'SIGKILL'); } catch {}
  }
  setTimeout(() => {
    try { fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 }); } catch {}
    process.exit(0);
  }, 300);
};
process.stdin.on('end', sweep);
process.stdin.on('error', sweep);
process.stdin.resume();
`;

/**
 * Starts the watchdog of a private server's folder: the last resort for a verify killed with no
 * chance to stop its server. `dismiss` ends it once verify has stopped the server itself.
 */
export function watchFolder(dir: string): { dismiss: () => void } {
  let child: ChildProcess | undefined;
  try {
    child = spawn(process.execPath, ['-e', SWEEP, dir], {
      cwd: '/',
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    child.on('error', () => undefined);
    child.stdin?.on('error', () => undefined);
    child.unref();
    (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  } catch {
    child = undefined; // without a watchdog, verify's own exit handlers still stop the server
  }
  return { dismiss: () => child?.kill('SIGKILL') };
}
