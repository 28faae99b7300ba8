import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../harness/ports.js';
import { tempDir } from '../harness/processes.js';
import { MAIN, runCli, type CliResult } from './run-cli.js';

let dir: ReturnType<typeof tempDir>;
let store: string;
const cli = (...args: string[]): Promise<CliResult> => runCli(args, { cwd: dir.path });

beforeAll(() => {
  dir = tempDir('leasehold-cli-complete-');
  store = `sqlite:${join(dir.path, 'x.db')}`;
});
afterAll(() => dir.cleanup());

/** Runs `leasehold ...args` on a fresh pseudo-terminal (util-linux script), so stderr is a TTY. */
function onTerminal(args: string[]): Promise<{ code: number; output: string }> {
  const quote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;
  // `exec`: a shell that stayed would sit between script and leasehold.
  const line = `exec ${[process.execPath, MAIN, ...args].map(quote).join(' ')}`;
  const env = { ...process.env };
  delete env.LEASEHOLD_STORE;
  const child = spawn('script', ['-qec', line, '/dev/null'], { cwd: dir.path, env });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) =>
    child.once('close', (code) => resolve({ code: code ?? -1, output })),
  );
}
const hasScript = spawnSync('script', ['--version']).status === 0;

describe('leasehold CLI for a first-time user', () => {
  it('shows examples in the help of every command', async () => {
    const top = await cli('--help');
    const commands = [...top.stdout.matchAll(/^ {2}([a-z]+) /gm)]
      .map((m) => m[1]!)
      .filter((c) => c !== 'help');
    expect(commands.length).toBeGreaterThanOrEqual(10);
    for (const command of commands) {
      const help = await cli(command, '--help');
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).toMatch(/\nExamples:\n {2}leasehold /);
    }
  });

  it('tells "held by another owner" (75) from a failure such as an unreachable store (1)', async () => {
    expect((await cli('acquire', 'exit', '--owner', 'a', '--store', store)).code).toBe(0);
    const held = await cli('acquire', 'exit', '--owner', 'b', '--store', store);
    expect(held.code).toBe(75);
    expect(held.stderr).toMatch(/^leasehold: LEASE_UNAVAILABLE: .*"a" with token 1/);
    const port = await freePort();
    const down = await cli(
      'acquire',
      'exit',
      '--owner',
      'b',
      '--store',
      `postgres://u:pw1SECRET@127.0.0.1:${port}/db?connectTimeoutMs=500`,
    );
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^leasehold: STORE_UNAVAILABLE: /);
    expect(down.stderr).not.toContain('pw1SECRET');
  });

  it('writes errors as JSON on stdout too with --json, without the password', async () => {
    await cli('acquire', 'json-err', '--owner', 'a', '--store', store);
    const held = await cli('acquire', 'json-err', '--owner', 'b', '--store', store, '--json');
    expect(held.code).toBe(75);
    expect(JSON.parse(held.stdout)).toMatchObject({
      error: { code: 'LEASE_UNAVAILABLE', exitCode: 75 },
    });
    expect((JSON.parse(held.stdout) as { error: { message: string } }).error.message).toMatch(
      /held by "a" with token 1/,
    );
    const port = await freePort();
    const down = await cli(
      'get',
      'x',
      '--json',
      '--store',
      `redis://u:pw1SECRET@127.0.0.1:${port}?connectTimeoutMs=500`,
    );
    expect(down.code).toBe(1);
    expect(JSON.parse(down.stdout)).toMatchObject({
      error: { code: 'STORE_UNAVAILABLE', exitCode: 1 },
    });
    expect(down.stdout + down.stderr).not.toContain('pw1SECRET');
    const missing = await cli('get', 'nobody-here', '--json', '--store', store);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ error: { exitCode: 1 } });
  });

  it.skipIf(!hasScript)(
    'says it is waiting, on a terminal only: acquire --wait and run --wait',
    async () => {
      // Held for 4 s: long enough that the waiter, started under a loaded machine, still finds it
      // held (at 1 s it sometimes started after the expiry and took the lease without waiting).
      await cli('acquire', 'busy', '--owner', 'holder', '--ttl', '4s', '--store', store);
      const acquire = await onTerminal([
        'acquire',
        'busy',
        '--owner',
        'me',
        '--wait',
        '10s',
        '--store',
        store,
      ]);
      expect(acquire.output).toMatch(
        /leasehold: waiting up to 10s for the lease on "busy" \(held by "holder" with token 1\)/,
      );
      expect(acquire.code).toBe(0);
      await cli('acquire', 'busy2', '--owner', 'holder', '--ttl', '4s', '--store', store);
      const run = await onTerminal([
        'run',
        'busy2',
        '--store',
        store,
        '--wait',
        '10s',
        '--',
        process.execPath,
        '-e',
        'console.log("ran")',
      ]);
      expect(run.output).toMatch(/leasehold: waiting up to 10s for the lease on "busy2"/);
      expect(run.output).toContain('ran');
      expect(run.code).toBe(0);
      // Piped, nothing is said: scripts read stderr for errors only.
      await cli('acquire', 'busy3', '--owner', 'holder', '--ttl', '1s', '--store', store);
      const piped = await cli(
        'acquire',
        'busy3',
        '--owner',
        'me',
        '--wait',
        '5s',
        '--store',
        store,
      );
      expect(piped.code).toBe(0);
      expect(piped.stderr).toBe('');
    },
    30_000,
  );
});
