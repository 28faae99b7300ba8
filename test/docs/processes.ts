import { execFile, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT } from './markdown.js';

/** Runs a program to its end; rejects with everything it printed when it fails. */
export function run(
  file: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeout: number },
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    execFile(
      file,
      args,
      { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, timeout: options.timeout },
      (error, stdout, stderr) => {
        if (!error) return done({ stdout, stderr });
        // The message is "Command failed: …" and what the program wrote on stderr.
        const killed = error.killed ? `killed after ${options.timeout} ms: ` : '';
        fail(new Error(`${killed}${error.message}\n${stdout}`));
      },
    );
  });
}

export interface UntilStoppedOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Whether it is up, from what it printed so far; it must be within `readyMs`. */
  ready: (stdout: string) => boolean;
  readyMs: number;
  /** How long it runs once up, before it is stopped. */
  runMs: number;
  /** Checks while it runs, just before it is stopped. */
  during?: (stdout: string) => Promise<void>;
  /** SIGTERM to its whole process group (a shell line: what Ctrl-C or a service manager does), else to it alone. */
  group: boolean;
  /** How long it, and every process of its group, may take to end after SIGTERM. */
  stopMs: number;
}

export interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Whether a process of group `pgid` is left (a zombie counts until reaped). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs a program that runs until it is stopped, in a process group of its own: waits until it is
 * up, lets it run, sends SIGTERM, and resolves with how it ended once it and its whole group are
 * gone. Rejects, with what it printed, when it ends before it is stopped, is not up in time, or
 * is not gone `stopMs` after SIGTERM; whatever is left of it is then killed.
 */
export async function runUntilStopped(
  file: string,
  args: readonly string[],
  options: UntilStoppedOptions,
): Promise<Ended> {
  const child = spawn(file, args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let ended: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  // It did not start (no such program): ended, saying why.
  child.once('error', (error) => {
    stderr += String(error);
    ended ??= { code: null, signal: null };
  });
  child.once('close', (code, signal) => (ended = { code, signal }));
  const pgid = child.pid ?? 0;
  const said = (): string => `\n--- stdout\n${stdout}--- stderr\n${stderr}`;
  const within = async (ms: number, done: () => boolean): Promise<boolean> => {
    const deadline = performance.now() + ms;
    while (!done() && performance.now() < deadline) await sleep(25);
    return done();
  };
  try {
    const up = await within(options.readyMs, () => ended !== undefined || options.ready(stdout));
    const early = (): Error =>
      new Error(`ended by itself before it was stopped (${JSON.stringify(ended)})${said()}`);
    if (ended) throw early();
    if (!up) throw new Error(`not up within ${options.readyMs} ms${said()}`);
    await sleep(options.runMs);
    if (ended) throw early();
    await options.during?.(stdout);
    if (ended) throw early();
    process.kill(options.group ? -pgid : pgid, 'SIGTERM');
    const stopped = await within(options.stopMs, () => ended !== undefined && !groupAlive(pgid));
    if (!stopped)
      throw new Error(
        `${ended ? 'processes of its group were' : 'it was'} still running ${options.stopMs} ms after SIGTERM${said()}`,
      );
    return { ...ended!, stdout, stderr };
  } finally {
    if (pgid > 0 && groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  }
}
