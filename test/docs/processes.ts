import { execFile } from 'node:child_process';
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
