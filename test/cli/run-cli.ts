import { execFile } from 'node:child_process';
import { join } from 'node:path';

/** The compiled CLI (tests run after `npm run build`). */
export const MAIN = join(import.meta.dirname, '../../dist/cli/main.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `leasehold ...args` to completion without `LEASEHOLD_STORE`, collecting what it printed. */
export function runCli(
  args: string[],
  options: { cwd?: string; timeout?: number } = {},
): Promise<CliResult> {
  const env = { ...process.env };
  delete env.LEASEHOLD_STORE;
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
