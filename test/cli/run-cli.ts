import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** The compiled CLI (tests run after `npm run build`). */
export const MAIN = join(import.meta.dirname, '../../dist/cli/main.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `leasehold ...args` to completion without `LEASEHOLD_STORE`, collecting what it printed.
 * `env` adds variables, or removes those set to `undefined`.
 */
export function runCli(
  args: string[],
  options: { cwd?: string; timeout?: number; env?: Record<string, string | undefined> } = {},
): Promise<CliResult> {
  const env = { ...process.env, ...options.env };
  delete env.LEASEHOLD_STORE;
  for (const [name, value] of Object.entries(options.env ?? {}))
    if (value === undefined) delete env[name];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      { cwd: options.cwd, env, timeout: options.timeout ?? 20_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

export interface StartedCli {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** The exit code, or -1 when a signal ended it. */
  exit: Promise<number>;
}

/** Starts `leasehold ...args` without `LEASEHOLD_STORE` and returns at once, collecting what it prints. */
export function startCli(args: string[], options: { cwd?: string } = {}): StartedCli {
  const env = { ...process.env };
  delete env.LEASEHOLD_STORE;
  const child = spawn(process.execPath, [MAIN, ...args], { cwd: options.cwd, env });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? -1)));
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}
