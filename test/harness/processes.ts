import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processTree, signalAll } from '../../src/cli/harness/servers/process-tree.js';

/** A fresh folder under the system temp dir, removed by `cleanup`. */
export function tempDir(prefix = 'leasehold-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** Spawns a server process, keeping the last 64 KiB of its output for error messages. */
export function startProcess(
  command: string,
  args: string[],
  options: SpawnOptions = {},
): ChildProcess & { output: () => string } {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-65536);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return Object.assign(child, { output: () => output });
}

// Every pid in the process tree under `pid`, `pid` first: the one `leasehold verify` uses too.
export { processTree };

/** Sends `signal` to every process in the tree (SIGSTOP/SIGCONT pause and resume a whole server). */
export function signalTree(pid: number, signal: NodeJS.Signals): void {
  signalAll(processTree(pid), signal);
}

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 15_000,
  everyMs = 25,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < end) {
    try {
      if (await check()) return;
    } catch (error) {
      lastError = error;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`,
  );
}

/** Waits for a child to exit, killing it with SIGKILL after `graceMs`. */
export async function stopProcess(
  child: ChildProcess,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 5000,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.pid) signalTree(child.pid, 'SIGCONT');
  child.kill(signal);
  const timer = setTimeout(() => child.pid && signalTree(child.pid, 'SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
