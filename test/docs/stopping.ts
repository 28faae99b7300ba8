import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '../../src/index.js';
import { runUntilStopped, type Ended, type UntilStoppedOptions } from './processes.js';
import { RUNNING_LINE } from './reader-globals.js';

// An example marked run-until-stopped is what a reader starts and later stops: it must still be
// running after a while, end by itself soon after SIGTERM (with its whole process group), say
// nothing of a failure, and leave no lease held in the store it ran on. LeaseManager's shutdown
// handlers stop it, then raise the signal again, so "ended by SIGTERM" is a clean end, as are
// exit 0 and 143 (128 + SIGTERM) from a program that exits by itself on SIGTERM.

/** How long an example runs once up before it is stopped, and may take to end after SIGTERM. */
const RUN_MS = 500;
const STOP_MS = 10_000;

/** The leases held in the SQLite file `file` (a record with an owner: not released). */
export async function heldLeases(file: string): Promise<string[]> {
  if (!existsSync(file)) return [];
  const store = await openStore(`sqlite:${file}`);
  try {
    const records = await store.list({ limit: 100_000 });
    return records.filter((r) => r.owner !== '').map((r) => r.resource);
  } finally {
    await store.close();
  }
}

/** Whether a program ended as a clean stop on SIGTERM does. */
function endedBySigterm({ code, signal }: Ended): boolean {
  return signal === 'SIGTERM' || code === 0 || code === 143;
}

/** What went wrong with an example that ran until stopped on the SQLite file `file`. */
async function problemsAfter(ended: Ended, file: string, alarming: RegExp): Promise<string[]> {
  const problems: string[] = [];
  if (!endedBySigterm(ended))
    problems.push(`ended with ${JSON.stringify({ code: ended.code, signal: ended.signal })}`);
  if (alarming.test(ended.stderr)) problems.push(`said on stderr: ${ended.stderr.trim()}`);
  const held = await heldLeases(file);
  if (held.length > 0) problems.push(`left ${held.length} held: ${held.slice(0, 5).join(', ')}`);
  return problems.length === 0
    ? []
    : [...problems, `--- stdout\n${ended.stdout}--- stderr\n${ended.stderr}`];
}

/**
 * Runs `node RUNNER MODULE …ARGS` (ARGS ending `until-stopped`) until the runner says the block
 * is running, a while more, then sends it SIGTERM. Nothing may appear on stderr. Resolves with
 * how many leases it held when it was stopped, and what went wrong.
 */
export async function stopProgram(
  runner: string,
  args: readonly string[],
  cwd: string,
): Promise<{ heldWhenStopped: number; problems: string[] }> {
  const file = join(cwd, 'leasehold.db');
  let heldWhenStopped = 0;
  const ended = await runUntilStopped(process.execPath, [runner, ...args], {
    ...options(cwd, file, {}),
    ready: (stdout) => stdout.includes(RUNNING_LINE),
    runMs: RUN_MS,
    during: async () => {
      heldWhenStopped = (await heldLeases(file)).length;
    },
    group: false,
  });
  return { heldWhenStopped, problems: await problemsAfter(ended, file, /\S/) };
}

/** A loopback page a command says it serves. */
const PAGE = /http:\/\/127\.0\.0\.1:\d+\/\S*/;

/**
 * Runs one shell line (`script` from `untilStoppedScript`) for a while, then sends SIGTERM to its
 * process group, as Ctrl-C or a service manager does. A line that `serves` a page is run until it
 * prints the page's URL, which must answer 200. A notice on stderr is fine, an error is not.
 */
export async function stopShellLine(
  script: string,
  serves: boolean,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<string[]> {
  const file = join(cwd, 'leasehold.db');
  // A command's temporary folders (the demo's store) go into the test's.
  mkdirSync(join(cwd, 'tmp'));
  const ended = await runUntilStopped('bash', ['-c', script], {
    ...options(cwd, file, { ...env, TMPDIR: join(cwd, 'tmp') }),
    ready: (stdout) => !serves || PAGE.test(stdout),
    runMs: serves ? 200 : RUN_MS,
    during: async (stdout) => {
      if (!serves) return;
      const url = PAGE.exec(stdout)![0];
      const answer = await fetch(url, { signal: AbortSignal.timeout(5000) });
      if (answer.status !== 200) throw new Error(`${url} answered ${answer.status}`);
    },
    group: true,
  });
  return problemsAfter(ended, file, /\b(error|failed|unhandled)\b/i);
}

function options(
  cwd: string,
  file: string,
  env: NodeJS.ProcessEnv,
): Pick<UntilStoppedOptions, 'cwd' | 'env' | 'readyMs' | 'stopMs'> {
  return {
    cwd,
    env: { ...process.env, LEASEHOLD_STORE: `sqlite:${file}`, ...env },
    readyMs: 20_000,
    stopMs: STOP_MS,
  };
}
